/*-------------------------------------------------------------------------
 *
 * snapshot.h
 *		What a module learned, kept across a clean restart: written by the
 *		postmaster at shutdown, read back (and removed) at the next start,
 *		as pg_stat_statements keeps its entries.  A crash loses it.
 *
 * Files live in pg_stat/ and start with a header naming the module's
 * layout; a file of another layout or a damaged one is ignored (LOG).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_SNAPSHOT_H
#define MCCDB_SNAPSHOT_H

#include "pgstat.h"

#define MCCDB_SNAPSHOT_PATH(name) PGSTAT_STAT_PERMANENT_DIRECTORY "/" name

typedef struct MccdbSnapshotHeader
{
	uint32		magic;			/* the module's; changed with its layout */
	uint32		entry_size;		/* sizeof one entry */
	uint64		nentries;		/* entries after the module's fixed part */
} MccdbSnapshotHeader;

/*
 * Writing: path.tmp, closed by a CRC-32C of everything put, then renamed
 * durably over path.  NULL on error (LOG).
 */
extern FILE *mccdb_snapshot_create(const char *path, const MccdbSnapshotHeader *h);
extern bool mccdb_snapshot_put(FILE *f, const void *data, size_t size);
extern void mccdb_snapshot_finish(FILE *f, const char *path, bool ok);

/*
 * Reading: NULL when there is no file, or its header is not h's magic and
 * entry size (LOG); h->nentries is filled in.  done() removes the file,
 * checks the CRC-32C that closes it, and logs when the caller found it bad
 * (ok = false) or the checksum does not match: the caller may keep what it
 * read only when done() returns true.
 */
extern FILE *mccdb_snapshot_open(const char *path, MccdbSnapshotHeader *h);
extern bool mccdb_snapshot_get(FILE *f, void *data, size_t size);
extern bool mccdb_snapshot_done(FILE *f, const char *path, bool ok);

#endif							/* MCCDB_SNAPSHOT_H */
