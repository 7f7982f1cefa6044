/*-------------------------------------------------------------------------
 *
 * table_sizes.c
 *		Hash table sizes learned from earlier runs (see table_sizes.h).
 *
 * A shared hash table keyed by (role, database, queryid, plan node id,
 * kind) holds the peak size each table had in the query's last run.  The
 * role is in the key because what a query reads depends on who runs it
 * (row-level security, security barrier views): a size learned from one
 * role's run would tell another the size of rows it may not see, and one
 * role's runs would change another's plans and admission.  A queryid names
 * no database (a database made from another as its template has the same
 * relation OIDs, so the same queryids), hence the database in the key;
 * and one queryid planned another way gives its node ids to other nodes,
 * hence the relations the node scanned kept in the entry: a size is used
 * only for a node over the same relations.  It is bounded
 * (mccdb.learned_tables entries); when full, new tables are not added
 * (the sizes of queries seen first stay), which keeps the cost of a
 * lookup a single hash probe.  They are written to pg_stat/ at a clean
 * shutdown and read back at the next start (snapshot.h); after a crash
 * the first run of each query teaches them again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "snapshot.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "table_sizes.h"
#include "utils/guc.h"
#include "utils/hsearch.h"

typedef struct LearnedKey
{
	uint64		queryid;
	Oid			userid;
	Oid			dbid;
	int32		plan_node_id;
	int32		kind;			/* MccdbTableKind */
} LearnedKey;

typedef struct LearnedSize
{
	LearnedKey	key;
	int32		nrelids;		/* the relations the node scanned (MccdbTable) */
	Oid			relids[MCCDB_TABLE_RELIDS];
	double		bytes;
	double		rows;
	int64		runs;
} LearnedSize;

/* GUCs */
static bool learn_table_sizes = true;
static int	learned_tables = 4096;

static HTAB *sizes = NULL;
static LWLock *sizes_lock = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
sizes_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(hash_estimate_size(learned_tables, sizeof(LearnedSize)));
	RequestNamedLWLockTranche("mccdb_table_sizes", 1);
}

/* Empty the table; the caller holds sizes_lock or is alone (startup). */
static void
remove_all_sizes(void)
{
	HASH_SEQ_STATUS seq;
	LearnedSize *e;

	hash_seq_init(&seq, sizes);
	while ((e = hash_seq_search(&seq)) != NULL)
		hash_search(sizes, &e->key, HASH_REMOVE, NULL);
}

#define SIZES_FILE MCCDB_SNAPSHOT_PATH("mccdb_table_sizes.stat")
#define SIZES_MAGIC 0x4d435333	/* change when LearnedSize changes */

/* At a clean shutdown of the postmaster: every learned size. */
static void
write_sizes_file(int code, Datum arg)
{
	MccdbSnapshotHeader h = {SIZES_MAGIC, sizeof(LearnedSize), 0};
	HASH_SEQ_STATUS seq;
	LearnedSize *e;
	FILE	   *f;
	bool		ok = true;

	if (code != 0 || sizes == NULL)
		return;
	h.nentries = hash_get_num_entries(sizes);
	if ((f = mccdb_snapshot_create(SIZES_FILE, &h)) == NULL)
		return;
	hash_seq_init(&seq, sizes);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		/* scan to the end even after an error: no hash_seq_term needed */
		if (ok && !mccdb_snapshot_put(f, e, sizeof(*e)))
			ok = false;
	}
	mccdb_snapshot_finish(f, SIZES_FILE, ok);
}

/* An entry as mccdb_learn_table_sizes() writes it. */
static bool
size_valid(const LearnedSize *e)
{
	return e->key.queryid != 0 &&
		e->key.kind >= MCCDB_HASH_JOIN && e->key.kind <= MCCDB_RESCANNED_INNER &&
		e->nrelids >= 0 && e->nrelids <= MCCDB_TABLE_RELIDS &&
		isfinite(e->bytes) && e->bytes > 0 && e->bytes < 1e18 &&
		isfinite(e->rows) && (e->rows >= 0 || e->rows == -1) &&	/* -1: not measured */
		e->runs > 0;
}

static void
read_sizes_file(void)
{
	MccdbSnapshotHeader h = {SIZES_MAGIC, sizeof(LearnedSize), 0};
	FILE	   *f = mccdb_snapshot_open(SIZES_FILE, &h);
	LearnedSize in;
	bool		ok = true;
	uint64		i;

	if (f == NULL)
		return;
	for (i = 0; ok && i < h.nentries; i++)
	{
		LearnedSize *e;
		bool		found;

		ok = mccdb_snapshot_get(f, &in, sizeof(in)) && size_valid(&in);
		/*
		 * A smaller mccdb.learned_tables than before keeps the first ones;
		 * the rest is read all the same, for the checksum that closes it.
		 */
		if (!ok || hash_get_num_entries(sizes) >= learned_tables)
			continue;
		e = hash_search(sizes, &in.key, HASH_ENTER_NULL, &found);
		if (e != NULL)
			*e = in;
	}
	/* as the log says: a damaged file is ignored, not half used */
	if (!mccdb_snapshot_done(f, SIZES_FILE, ok))
		remove_all_sizes();
}

static void
sizes_shmem_startup(void)
{
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sizes_lock = &(GetNamedLWLockTranche("mccdb_table_sizes"))->lock;
	info.keysize = sizeof(LearnedKey);
	info.entrysize = sizeof(LearnedSize);
	sizes = ShmemInitHash("mccdb learned table sizes", learned_tables, learned_tables,
						  &info, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);

	/*
	 * The postmaster: what the last clean shutdown kept (the file exists
	 * only then: reading removes it), kept again at the next.
	 */
	if (!IsUnderPostmaster)
	{
		read_sizes_file();
		on_shmem_exit(write_sizes_file, (Datum) 0);
	}
}

void
mccdb_table_sizes_init(void)
{
	DefineCustomBoolVariable("mccdb.learn_table_sizes",
							 "Uses the hash table sizes a query had in its last run instead of the planner's estimate.",
							 "EXPLAIN says which figure each table's size is.",
							 &learn_table_sizes,
							 true,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.learned_tables",
							"Hash tables whose sizes are remembered across runs.",
							NULL,
							&learned_tables,
							4096, 16, 1000000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sizes_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sizes_shmem_startup;
}

bool
mccdb_table_sizes_enabled(void)
{
	return learn_table_sizes && sizes != NULL;
}

/* Filled in place: the key's padding is hashed too, and must be zero. */
static void
key_of(LearnedKey *key, uint64 queryid, const MccdbTable *t)
{
	memset(key, 0, sizeof(*key));
	key->queryid = queryid;
	key->userid = GetUserId();
	key->dbid = MyDatabaseId;
	key->plan_node_id = t->plan_node_id;
	key->kind = t->kind;
}

/* Was the entry learned from a node over the relations this one scans? */
static bool
same_relations(const LearnedSize *e, const MccdbTable *t)
{
	return e->nrelids == t->nrelids &&
		memcmp(e->relids, t->relids, sizeof(e->relids)) == 0;
}

bool
mccdb_learned_table_bytes(uint64 queryid, const MccdbTable *t, double *bytes)
{
	LearnedKey	key;
	LearnedSize *e;
	bool		found;

	if (!mccdb_table_sizes_enabled() || queryid == 0)
		return false;
	key_of(&key, queryid, t);
	LWLockAcquire(sizes_lock, LW_SHARED);
	e = hash_search(sizes, &key, HASH_FIND, NULL);
	found = e != NULL && same_relations(e, t);
	if (found)
		*bytes = e->bytes;
	LWLockRelease(sizes_lock);
	return found;
}

void
mccdb_learn_table_sizes(uint64 queryid, const MccdbLocality *loc)
{
	ListCell   *lc;

	if (!mccdb_table_sizes_enabled() || queryid == 0)
		return;
	/* most statements measured no table: take no lock for them */
	foreach(lc, loc->tables)
		if (((MccdbTable *) lfirst(lc))->actual_bytes > 0)
			break;
	if (lc == NULL)
		return;
	LWLockAcquire(sizes_lock, LW_EXCLUSIVE);
	foreach(lc, loc->tables)
	{
		MccdbTable *t = lfirst(lc);
		LearnedKey	key;
		LearnedSize *e;
		bool		found;

		if (t->actual_bytes <= 0)
			continue;			/* not measured */
		key_of(&key, queryid, t);
		e = hash_search(sizes, &key, HASH_FIND, NULL);
		if (e == NULL)
		{
			/* bounded: when full, the sizes already there stay */
			if (hash_get_num_entries(sizes) >= learned_tables)
				continue;
			e = hash_search(sizes, &key, HASH_ENTER_NULL, &found);
			if (e == NULL)
				continue;
			e->runs = 0;
		}
		else if (!same_relations(e, t))
			e->runs = 0;		/* another node of this id: start again */
		e->nrelids = t->nrelids;
		memcpy(e->relids, t->relids, sizeof(e->relids));
		e->bytes = t->actual_bytes;
		e->rows = t->actual_rows;
		e->runs++;
	}
	LWLockRelease(sizes_lock);
}

void
mccdb_table_sizes_reset(void)
{
	if (sizes == NULL)
		return;
	LWLockAcquire(sizes_lock, LW_EXCLUSIVE);
	remove_all_sizes();
	LWLockRelease(sizes_lock);
}
