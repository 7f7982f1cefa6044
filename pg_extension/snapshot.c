/*-------------------------------------------------------------------------
 *
 * snapshot.c
 *		Files that keep learned state across a clean restart (snapshot.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "port/pg_crc32c.h"

#include "snapshot.h"
#include "storage/fd.h"

/*
 * The CRC-32C of what was put or got since create or open.  Start-up and
 * shutdown handle one file at a time, so one running value is enough.
 */
static pg_crc32c running_crc;

FILE *
mccdb_snapshot_create(const char *path, const MccdbSnapshotHeader *h)
{
	char		tmp[MAXPGPATH];
	FILE	   *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = AllocateFile(tmp, PG_BINARY_W);
	if (f == NULL)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("mccdb: could not write file \"%s\": %m", tmp)));
		return NULL;
	}
	INIT_CRC32C(running_crc);
	if (!mccdb_snapshot_put(f, h, sizeof(*h)))
	{
		mccdb_snapshot_finish(f, path, false);
		return NULL;
	}
	return f;
}

bool
mccdb_snapshot_put(FILE *f, const void *data, size_t size)
{
	COMP_CRC32C(running_crc, data, size);
	return fwrite(data, size, 1, f) == 1;
}

void
mccdb_snapshot_finish(FILE *f, const char *path, bool ok)
{
	char		tmp[MAXPGPATH];

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (ok)
	{
		pg_crc32c	crc = running_crc;

		FIN_CRC32C(crc);
		ok = fwrite(&crc, sizeof(crc), 1, f) == 1;
	}
	if (FreeFile(f) != 0)
		ok = false;
	if (ok)
	{
		(void) durable_rename(tmp, path, LOG);
		return;
	}
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("mccdb: could not write file \"%s\": %m", tmp)));
	unlink(tmp);
}

FILE *
mccdb_snapshot_open(const char *path, MccdbSnapshotHeader *h)
{
	FILE	   *f = AllocateFile(path, PG_BINARY_R);
	MccdbSnapshotHeader got;

	if (f == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("mccdb: could not read file \"%s\": %m", path)));
		return NULL;
	}
	INIT_CRC32C(running_crc);
	if (!mccdb_snapshot_get(f, &got, sizeof(got)) ||
		got.magic != h->magic || got.entry_size != h->entry_size)
	{
		mccdb_snapshot_done(f, path, false);
		return NULL;
	}
	h->nentries = got.nentries;
	return f;
}

bool
mccdb_snapshot_get(FILE *f, void *data, size_t size)
{
	if (fread(data, size, 1, f) != 1)
		return false;
	COMP_CRC32C(running_crc, data, size);
	return true;
}

bool
mccdb_snapshot_done(FILE *f, const char *path, bool ok)
{
	pg_crc32c	stored;
	char		extra;

	/* the checksum closes the file: nothing may follow it */
	if (ok)
	{
		FIN_CRC32C(running_crc);
		ok = fread(&stored, sizeof(stored), 1, f) == 1 &&
			EQ_CRC32C(stored, running_crc) &&
			fread(&extra, 1, 1, f) == 0;
	}
	FreeFile(f);
	/* read once: a crash later must not bring back older state */
	unlink(path);
	if (!ok)
		ereport(LOG,
				(errmsg("mccdb: ignoring invalid file \"%s\"", path),
				 errdetail("It was written by another version of mccdb, or is damaged; what it held is learned again.")));
	return ok;
}
