/*-------------------------------------------------------------------------
 *
 * snapshot.c
 *		Files that keep learned state across a clean restart (snapshot.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "snapshot.h"
#include "storage/fd.h"

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
	return fwrite(data, size, 1, f) == 1;
}

void
mccdb_snapshot_finish(FILE *f, const char *path, bool ok)
{
	char		tmp[MAXPGPATH];

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
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
	return fread(data, size, 1, f) == 1;
}

void
mccdb_snapshot_done(FILE *f, const char *path, bool ok)
{
	FreeFile(f);
	/* read once: a crash later must not bring back older state */
	unlink(path);
	if (!ok)
		ereport(LOG,
				(errmsg("mccdb: ignoring invalid file \"%s\"", path),
				 errdetail("It was written by another version of mccdb, or is damaged; what it held is learned again.")));
}
