/*-------------------------------------------------------------------------
 *
 * learned.c
 *		What the admission gate knows of queries and keeps: the run time of
 *		each known query alone, the seconds-per-cost rate, the interference
 *		matrix learned online (model.c) and the one measured on the host
 *		(the adaptive policy's), with the SQL functions that show and set
 *		them.
 *
 * The measured matrix is written to $PGDATA/mccdb_interference.matrix
 * whenever it is loaded, and read back when shared memory is created, so
 * it survives restarts and crash recovery.  What was learned online (the
 * matrix cells, the rate, the run times and statistics of known queries)
 * is written to pg_stat/mccdb_learned.stat at a clean shutdown and read
 * back at the next start, as pg_stat_statements keeps its entries: a crash
 * loses it.  Both readers check every value, not only the layout: a bad
 * file is ignored whole, never half loaded.
 *
 * Only alone runs anchor the alone times: learning them from co-runs
 * divided by the matrix's own prediction would feed the matrix its own
 * errors back (learn_from()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <unistd.h>

#include "gate_state.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "snapshot.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lock.h"
#include "table_sizes.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#define MATRIX_FILE "mccdb_interference.matrix"
#define MATRIX_MAGIC "mccdb interference matrix 1"
#define LEARNED_FILE MCCDB_SNAPSHOT_PATH("mccdb_learned.stat")
#define LEARNED_MAGIC 0x4d43444f	/* change when the layout below changes */
/* Seconds per planner cost unit before anything was measured. */
#define DEFAULT_SECONDS_PER_COST 1e-5
/* Completions shorter than this teach nothing (timer noise). */
#define MIN_LEARN_MS 5.0
/* A run with less company than this (summed overlap) counts as alone. */
#define ALONE_OVERLAP 0.10
/* A loaded (calibrated) matrix counts as this many learned samples. */
#define WARM_START_WEIGHT 5.0

PG_FUNCTION_INFO_V1(mccdb_set_interference);
PG_FUNCTION_INFO_V1(mccdb_clear_interference);
PG_FUNCTION_INFO_V1(mccdb_replace_interference);
PG_FUNCTION_INFO_V1(mccdb_interference_matrix);
PG_FUNCTION_INFO_V1(mccdb_learned_interference);
PG_FUNCTION_INFO_V1(mccdb_run_time_model);
PG_FUNCTION_INFO_V1(mccdb_learned_reset);

/* A slowdown the gate accepts: a ratio, not a typo. */
static bool
slowdown_valid(double s)
{
	return s > 0 && s < 1000;
}

/* The matrix file: a header line, then "target corunner slowdown" lines. */
static bool
read_matrix_file(double matrix[MODEL_CLASSES][MODEL_CLASSES])
{
	FILE	   *f = AllocateFile(MATRIX_FILE, "r");
	char		line[128];
	int			i,
				j,
				n = 0;
	bool		ok = true;

	if (f == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("mccdb: could not read \"%s\": %m", MATRIX_FILE)));
		return false;
	}
	for (i = 0; i < MODEL_CLASSES; i++)
		for (j = 0; j < MODEL_CLASSES; j++)
			matrix[i][j] = 1.0;
	if (fgets(line, sizeof(line), f) == NULL ||
		strncmp(line, MATRIX_MAGIC, strlen(MATRIX_MAGIC)) != 0)
		ok = false;
	while (ok && fgets(line, sizeof(line), f) != NULL)
	{
		char		t[16],
					c[16];
		double		s;

		if (sscanf(line, "%15s %15s %lf", t, c, &s) != 3 ||
			(i = mccdb_locality_class_from_name(t)) < 0 ||
			(j = mccdb_locality_class_from_name(c)) < 0 ||
			!slowdown_valid(s))
			ok = false;
		else
		{
			matrix[i][j] = s;
			n++;
		}
	}
	FreeFile(f);
	if (!ok || n == 0)
		ereport(LOG,
				(errmsg("mccdb: ignoring malformed interference matrix file \"%s\"", MATRIX_FILE),
				 errhint("Load the matrix again with mccdb_replace_interference().")));
	return ok && n > 0;
}

/* Forget what was learned; the caller holds mccdb_adm->lock or is alone (startup). */
void
mccdb_forget_learned(void)
{
	memset(mccdb_adm->learned, 0, sizeof(mccdb_adm->learned));
	memset(mccdb_adm->roles, 0, sizeof(mccdb_adm->roles));
	memset(mccdb_adm->known, 0, sizeof(mccdb_adm->known));
	pg_atomic_fetch_add_u64(&mccdb_adm->known_generation, 1);
}

/*
 * The learned state across a clean restart (snapshot.h): the matrix cells
 * the matrix roles start from, and the roles' rates and matrices, then the
 * known queries in use.
 */
static void
write_learned_file(int code, Datum arg)
{
	MccdbSnapshotHeader h = {LEARNED_MAGIC, sizeof(KnownQuery), 0};
	FILE	   *f;
	bool		ok;
	int			i;

	/* after a crash, shared memory may be corrupt: keep nothing */
	if (code != 0 || mccdb_adm == NULL)
		return;
	for (i = 0; i < KNOWN_QUERIES; i++)
		if (mccdb_adm->known[i].key.queryid != 0)
			h.nentries++;
	if ((f = mccdb_snapshot_create(LEARNED_FILE, &h)) == NULL)
		return;
	ok = mccdb_snapshot_put(f, mccdb_adm->learned, sizeof(mccdb_adm->learned)) &&
		mccdb_snapshot_put(f, mccdb_adm->roles, sizeof(mccdb_adm->roles));
	for (i = 0; ok && i < KNOWN_QUERIES; i++)
		if (mccdb_adm->known[i].key.queryid != 0)
			ok = mccdb_snapshot_put(f, &mccdb_adm->known[i], sizeof(KnownQuery));
	mccdb_snapshot_finish(f, LEARNED_FILE, ok);
}

/*
 * A learned cell as model_cell_add() leaves it: a finite estimate (the log
 * of a ratio, a rate or a time, whose exp() is finite) and a weight in
 * [0, memory].
 */
static bool
cell_valid(const ModelCell *c)
{
	return isfinite(c->log_estimate) && fabs(c->log_estimate) < 700.0 &&
		c->weight >= 0 && c->weight <= MODEL_MEMORY && c->samples >= 0;
}

static bool
known_query_valid(const KnownQuery *k)
{
	const MccdbQueryCounters *s = &k->stats;

	return k->key.queryid != 0 && k->key.cls >= 0 && k->key.cls < MODEL_CLASSES &&
		cell_valid(&k->seconds) &&
		s->admissions >= 0 && s->bypasses >= 0 && s->starved >= 0 &&
		s->lock_admitted >= 0 && s->coruns >= 0 &&
		isfinite(s->total_wait_ms) && s->total_wait_ms >= 0 &&
		isfinite(s->max_wait_ms) && s->max_wait_ms >= 0 &&
		isfinite(s->slowdown_sum) && s->slowdown_sum >= 0;
}

/*
 * Read what write_learned_file() wrote.  Every value is checked and the
 * file's checksum too (snapshot.c): one bad value and nothing is loaded, so
 * a damaged file can never make the model NaN.
 */
static void
read_learned_file(void)
{
	MccdbSnapshotHeader h = {LEARNED_MAGIC, sizeof(KnownQuery), 0};
	FILE	   *f = mccdb_snapshot_open(LEARNED_FILE, &h);
	bool		ok;
	uint64		i;

	if (f == NULL)
		return;
	ok = h.nentries <= KNOWN_QUERIES &&
		mccdb_snapshot_get(f, mccdb_adm->learned, sizeof(mccdb_adm->learned)) &&
		mccdb_snapshot_get(f, mccdb_adm->roles, sizeof(mccdb_adm->roles));
	for (int r = 0; ok && r < ROLE_MODELS; r++)
	{
		RoleModel  *role = &mccdb_adm->roles[r];

		ok = cell_valid(&role->rate);
		for (int t = 0; ok && t < MODEL_CLASSES; t++)
			for (int c = 0; ok && c < MODEL_CLASSES; c++)
				ok = cell_valid(&role->learned[t][c]);
		role->last_used_us = 0;
	}
	for (int t = 0; ok && t < MODEL_CLASSES; t++)
		for (int c = 0; ok && c < MODEL_CLASSES; c++)
			ok = cell_valid(&mccdb_adm->learned[t][c]);
	for (i = 0; ok && i < h.nentries; i++)
	{
		KnownQuery *k = &mccdb_adm->known[i];

		ok = mccdb_snapshot_get(f, k, sizeof(KnownQuery)) && known_query_valid(k);
		/* the monotonic clock starts again with the machine */
		k->last_used_us = 0;
	}
	ok = mccdb_snapshot_done(f, LEARNED_FILE, ok);
	if (!ok)
		mccdb_forget_learned();
}

static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void remove_matrix_temp_files(void);

/*
 * The postmaster has created the gate's shared memory (the hook before
 * this one, gate_state.c): the matrix the server had (after a restart or
 * crash recovery), and what it learned before a clean stop, written again
 * at the next.
 */
static void
learned_shmem_startup(void)
{
	double		matrix[MODEL_CLASSES][MODEL_CLASSES];

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	if (IsUnderPostmaster || mccdb_adm == NULL)
		return;
	remove_matrix_temp_files();
	if (read_matrix_file(matrix))
	{
		memcpy(mccdb_adm->interference, matrix, sizeof(matrix));
		mccdb_adm->have_matrix = true;
	}
	read_learned_file();
	on_shmem_exit(write_learned_file, (Datum) 0);
	if (strcmp(GetConfigOption("compute_query_id", false, false), "off") == 0)
		ereport(LOG,
				(errmsg("mccdb: compute_query_id is off: run times and mccdb_query_stats are not kept"),
				 errhint("Set compute_query_id to auto (its default) or on.")));
}

/* After mccdb_admission_init(): the learned state's start-up. */
void
mccdb_learned_init(void)
{
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = learned_shmem_startup;
}

KnownQuery *
mccdb_known_query(const MccdbQueryKey *key, bool create, int64 now_us)
{
	KnownQuery *oldest = NULL;
	int			i;

	if (key->queryid == 0)
		return NULL;
	for (i = 0; i < KNOWN_QUERIES; i++)
	{
		KnownQuery *k = &mccdb_adm->known[i];

		if (mccdb_query_key_equal(&k->key, key))
			return k;
		if (oldest == NULL || k->key.queryid == 0 ||
			(oldest->key.queryid != 0 && k->last_used_us < oldest->last_used_us))
			oldest = k;
	}
	if (!create)
		return NULL;
	/* bounded, like pg_stat_statements: the least recently used makes room */
	if (oldest->key.queryid != 0)
		mccdb_query_stats_forget(&oldest->key);
	memset(oldest, 0, sizeof(*oldest));
	pg_atomic_fetch_add_u64(&mccdb_adm->known_generation, 1);
	oldest->key = *key;
	oldest->last_used_us = now_us;
	oldest->stats.since = GetCurrentTimestamp();
	return oldest;
}

/*
 * A role's model: found, else (create) a new one in the place of the role
 * used longest ago, its matrix where every role's starts, else NULL.
 * Caller holds the lock (exclusively to create).
 */
static RoleModel *
role_model(Oid userid, bool create, int64 now_us)
{
	RoleModel  *oldest = NULL;

	for (int i = 0; i < ROLE_MODELS; i++)
	{
		RoleModel  *r = &mccdb_adm->roles[i];

		if (r->userid == userid && OidIsValid(userid))
			return r;
		if (oldest == NULL || !OidIsValid(r->userid) ||
			(OidIsValid(oldest->userid) && r->last_used_us < oldest->last_used_us))
			oldest = r;
	}
	if (!create)
		return NULL;
	memset(oldest, 0, sizeof(*oldest));
	oldest->userid = userid;
	memcpy(oldest->learned, mccdb_adm->learned, sizeof(oldest->learned));
	oldest->last_used_us = now_us;
	return oldest;
}

void
mccdb_role_matrix(Oid userid, double m[MODEL_CLASSES][MODEL_CLASSES])
{
	RoleModel  *r = role_model(userid, false, 0);

	model_matrix((const ModelCell (*)[MODEL_CLASSES]) (r ? r->learned : mccdb_adm->learned), m);
}

/* A role's seconds per cost unit, the default before it ran anything alone. */
static double
role_rate_value(Oid userid)
{
	RoleModel  *r = role_model(userid, false, 0);

	return r ? model_cell_value(&r->rate, DEFAULT_SECONDS_PER_COST) : DEFAULT_SECONDS_PER_COST;
}

/*
 * Seconds a query runs alone: its own history, else its cost at the learned
 * rate.  A cost that is not known (negative: priced under the session's own
 * settings, server_cost.h) is taken as long as the longest wait the gate
 * imposes, mccdb.max_wait: nothing the session set makes it look short.
 */
double
mccdb_predict_seconds(const MccdbQueryKey *key, double cost, int64 now_us)
{
	KnownQuery *k = mccdb_known_query(key, false, now_us);

	if (k && k->seconds.weight > 0)
	{
		k->last_used_us = now_us;
		return model_cell_value(&k->seconds, 0);
	}
	if (cost < 0)
		return mccdb_max_wait_ms / 1000.0;
	return cost * role_rate_value(key->userid);
}

/*
 * An admitted statement is done.  A run (nearly) alone teaches its alone
 * time and the seconds-per-cost rate; a run with company, of a query whose
 * alone time is known that way, teaches the matrix cells of the classes it
 * ran beside (measured time over alone time, weighted by the overlap).
 * Caller holds the lock exclusively and has charged the running time.
 */
void
mccdb_learn_from(AdmissionEntry *e, int64 now_us)
{
	double		overlap[MODEL_CLASSES];
	double		seconds = e->run_ms / 1000.0;
	double		company = 0;
	MccdbQueryKey key = mccdb_entry_key(e);
	KnownQuery *k;
	int			c;

	if (e->run_ms < MIN_LEARN_MS)
		return;
	for (c = 0; c < MODEL_CLASSES; c++)
	{
		overlap[c] = e->overlap_ms[c] / e->run_ms;
		company += overlap[c];
	}
	k = mccdb_known_query(&key, company < ALONE_OVERLAP, now_us);
	if (company < ALONE_OVERLAP)
	{
		if (k != NULL)
		{
			model_cell_add(&k->seconds, seconds, 1.0);
			k->last_used_us = now_us;
		}
		if (e->cost > 0)
		{
			RoleModel  *r = role_model(e->userid, true, now_us);

			model_cell_add(&r->rate, seconds / e->cost, 1.0);
			r->last_used_us = now_us;
		}
	}
	else if (k != NULL && k->seconds.weight > 0)
	{
		double		alone = model_cell_value(&k->seconds, 0);
		MccdbQueryCounters corun = {.coruns = 1, .slowdown_sum = seconds / alone};
		RoleModel  *r = role_model(e->userid, true, now_us);

		(void) model_learn_completion(r->learned, e->cls, seconds / alone, overlap);
		r->last_used_us = now_us;
		mccdb_query_stats_add(&k->stats, &k->key, &corun);
		k->last_used_us = now_us;
	}
}

static int
class_from_text(text *t)
{
	char	   *name = text_to_cstring(t);
	int			cls = mccdb_locality_class_from_name(name);

	if (cls < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown locality class \"%s\"", name),
				 errhint("Use strong, moderate or weak.")));
	return cls;
}

static void
check_slowdown(double slowdown)
{
	if (!slowdown_valid(slowdown))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("slowdown must be a ratio between 0 and 1000, not %g", slowdown),
				 errhint("A slowdown is co-run time / alone time, e.g. 1.25.")));
}

/* The matrix in force, 1.0 where none is loaded. */
static void
current_matrix(double matrix[MODEL_CLASSES][MODEL_CLASSES])
{
	int			i,
				j;

	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	for (i = 0; i < MODEL_CLASSES; i++)
		for (j = 0; j < MODEL_CLASSES; j++)
			matrix[i][j] = mccdb_adm->have_matrix ? mccdb_adm->interference[i][j] : 1.0;
	LWLockRelease(mccdb_adm->lock);
}

/*
 * Changes of the matrix are read-modify-write of the file and of shared
 * memory: one at a time.  A heavyweight lock, held to the end of the
 * transaction, serialises them without holding an LWLock over file I/O; it
 * shows in pg_locks as an advisory lock of database 0 with objsubid 3
 * (user advisory locks use 1 and 2, so none can collide with it).
 */
static void
lock_matrix_for_change(void)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, InvalidOid, 0x6d636364, 0x6d617478, 3);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * Make a matrix the server's: write the file (durably: it is read back when
 * shared memory is created), then swap it in.  NULL clears it.  The caller
 * took lock_matrix_for_change().
 */
static void
install_matrix(double matrix[MODEL_CLASSES][MODEL_CLASSES])
{
	if (matrix == NULL)
	{
		if (unlink(MATRIX_FILE) == 0)
			fsync_fname(".", true); /* the removal survives a crash too */
		else if (errno != ENOENT)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not remove \"%s\": %m", MATRIX_FILE)));
	}
	else
	{
		StringInfoData buf;
		char		tmp[MAXPGPATH];
		int			fd,
					i,
					j;

		initStringInfo(&buf);
		appendStringInfo(&buf, "%s\n", MATRIX_MAGIC);
		for (i = 0; i < MODEL_CLASSES; i++)
			for (j = 0; j < MODEL_CLASSES; j++)
				appendStringInfo(&buf, "%s %s %.17g\n",
								 mccdb_locality_class_name(i),
								 mccdb_locality_class_name(j), matrix[i][j]);
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", MATRIX_FILE, MyProcPid);
		fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
		if (fd < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create \"%s\": %m", tmp)));
		errno = 0;
		if (write(fd, buf.data, buf.len) != buf.len || pg_fsync(fd) != 0)
		{
			int			save_errno = errno ? errno : ENOSPC;

			CloseTransientFile(fd);
			unlink(tmp);
			errno = save_errno;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write \"%s\": %m", tmp)));
		}
		if (CloseTransientFile(fd) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not close \"%s\": %m", tmp)));
		(void) durable_rename(tmp, MATRIX_FILE, ERROR);
	}

	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	if (matrix != NULL)
	{
		int			i,
					j;

		memcpy(mccdb_adm->interference, matrix, sizeof(mccdb_adm->interference));
		/* a calibrated matrix is where learning starts again from */
		for (i = 0; i < MODEL_CLASSES; i++)
			for (j = 0; j < MODEL_CLASSES; j++)
			{
				mccdb_adm->learned[i][j].log_estimate = log(matrix[i][j]);
				mccdb_adm->learned[i][j].weight = WARM_START_WEIGHT;
				mccdb_adm->learned[i][j].samples = 0;
			}
		for (i = 0; i < ROLE_MODELS; i++)
			memcpy(mccdb_adm->roles[i].learned, mccdb_adm->learned,
				   sizeof(mccdb_adm->roles[i].learned));
	}
	mccdb_adm->have_matrix = matrix != NULL;
	LWLockRelease(mccdb_adm->lock);
	ConditionVariableBroadcast(&mccdb_adm->cv);
}

/*
 * A backend that crashed while writing the matrix left its temporary file:
 * the postmaster removes such files before anything reads the matrix.
 */
static void
remove_matrix_temp_files(void)
{
	DIR		   *dir = AllocateDir(".");
	struct dirent *de;

	while ((de = ReadDir(dir, ".")) != NULL)
	{
		size_t		len = strlen(de->d_name);

		if (strncmp(de->d_name, MATRIX_FILE ".", strlen(MATRIX_FILE) + 1) == 0 &&
			len > 4 && strcmp(de->d_name + len - 4, ".tmp") == 0 &&
			unlink(de->d_name) != 0)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("mccdb: could not remove \"%s\": %m", de->d_name)));
	}
	FreeDir(dir);
}

/* Set one cell of the interference matrix the adaptive policy uses. */
Datum
mccdb_set_interference(PG_FUNCTION_ARGS)
{
	int			target = class_from_text(PG_GETARG_TEXT_PP(0));
	int			corunner = class_from_text(PG_GETARG_TEXT_PP(1));
	double		slowdown = PG_GETARG_FLOAT8(2);
	double		matrix[MODEL_CLASSES][MODEL_CLASSES];

	mccdb_admission_require_shmem();
	check_slowdown(slowdown);
	lock_matrix_for_change();
	current_matrix(matrix);
	matrix[target][corunner] = slowdown;
	install_matrix(matrix);
	PG_RETURN_VOID();
}

/*
 * Replace the whole matrix, all or nothing: every cell is checked before
 * anything changes.  Cells not given are 1.0 (no interference).
 */
Datum
mccdb_replace_interference(PG_FUNCTION_ARGS)
{
	ArrayType  *targets = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *corunners = PG_GETARG_ARRAYTYPE_P(1);
	ArrayType  *slowdowns = PG_GETARG_ARRAYTYPE_P(2);
	Datum	   *t,
			   *c,
			   *s;
	bool	   *tn,
			   *cn,
			   *sn;
	int			nt,
				nc,
				ns,
				i,
				j;
	double		matrix[MODEL_CLASSES][MODEL_CLASSES];

	mccdb_admission_require_shmem();
	deconstruct_array(targets, TEXTOID, -1, false, TYPALIGN_INT, &t, &tn, &nt);
	deconstruct_array(corunners, TEXTOID, -1, false, TYPALIGN_INT, &c, &cn, &nc);
	deconstruct_array(slowdowns, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &s, &sn, &ns);
	if (nt != nc || nt != ns)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("target, corunner and slowdown arrays must have the same length")));
	for (i = 0; i < MODEL_CLASSES; i++)
		for (j = 0; j < MODEL_CLASSES; j++)
			matrix[i][j] = 1.0;
	for (i = 0; i < nt; i++)
	{
		if (tn[i] || cn[i] || sn[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("interference matrix cells must not be null")));
		check_slowdown(DatumGetFloat8(s[i]));
		matrix[class_from_text(DatumGetTextPP(t[i]))][class_from_text(DatumGetTextPP(c[i]))] =
			DatumGetFloat8(s[i]);
	}
	lock_matrix_for_change();
	if (nt == 0)
		install_matrix(NULL);
	else
		install_matrix(matrix);
	PG_RETURN_INT32(nt);
}

/*
 * Nine rows, target x co-runner: the slowdown, and with learned cells also
 * their sample count and weight.
 */
static void
put_matrix_rows(ReturnSetInfo *rsinfo, double matrix[MODEL_CLASSES][MODEL_CLASSES], const ModelCell cells[MODEL_CLASSES][MODEL_CLASSES])
{
	int			i,
				j;

	for (i = 0; i < MODEL_CLASSES; i++)
		for (j = 0; j < MODEL_CLASSES; j++)
		{
			Datum		values[5];
			bool		nulls[5] = {0};

			values[0] = CStringGetTextDatum(mccdb_locality_class_name(i));
			values[1] = CStringGetTextDatum(mccdb_locality_class_name(j));
			values[2] = Float8GetDatum(matrix[i][j]);
			if (cells != NULL)
			{
				values[3] = Int64GetDatum((int64) cells[i][j].samples);
				values[4] = Float8GetDatum(cells[i][j].weight);
			}
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
}

/* The matrix the server uses now: nine rows, or none when none is loaded. */
Datum
mccdb_interference_matrix(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	double		matrix[MODEL_CLASSES][MODEL_CLASSES];
	bool		loaded;

	mccdb_admission_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	loaded = mccdb_adm->have_matrix;
	memcpy(matrix, mccdb_adm->interference, sizeof(matrix));
	LWLockRelease(mccdb_adm->lock);
	if (loaded)
		put_matrix_rows(rsinfo, matrix, NULL);
	return (Datum) 0;
}

/*
 * The matrix the predictive policy learned from the calling role's
 * co-runs (its statements are judged by it), with how many samples fed
 * each cell.
 */
Datum
mccdb_learned_interference(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ModelCell	cells[MODEL_CLASSES][MODEL_CLASSES];
	double		matrix[MODEL_CLASSES][MODEL_CLASSES];
	RoleModel  *r;

	mccdb_admission_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	r = role_model(GetUserId(), false, 0);
	memcpy(cells, r ? r->learned : mccdb_adm->learned, sizeof(cells));
	LWLockRelease(mccdb_adm->lock);
	model_matrix((const ModelCell (*)[MODEL_CLASSES]) cells, matrix);
	put_matrix_rows(rsinfo, matrix, (const ModelCell (*)[MODEL_CLASSES]) cells);
	return (Datum) 0;
}

/*
 * The run-time model: the calling role's learned rate, and how many queries
 * the gate knows by queryid.
 */
Datum
mccdb_run_time_model(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {0};
	RoleModel  *rate;
	int			known = 0,
				i;

	mccdb_admission_require_shmem();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	for (i = 0; i < KNOWN_QUERIES; i++)
		if (mccdb_adm->known[i].key.queryid != 0)
			known++;
	rate = role_model(GetUserId(), false, 0);
	values[0] = Float8GetDatum(role_rate_value(GetUserId()));
	values[1] = Int64GetDatum(rate ? (int64) rate->rate.samples : 0);
	values[2] = Int32GetDatum(known);
	values[3] = Int32GetDatum(KNOWN_QUERIES);
	LWLockRelease(mccdb_adm->lock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* Forget everything learned: matrix cells, rate, run times, table sizes. */
Datum
mccdb_learned_reset(PG_FUNCTION_ARGS)
{
	mccdb_admission_require_shmem();
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	mccdb_forget_learned();
	LWLockRelease(mccdb_adm->lock);
	mccdb_query_stats_forget_all();
	mccdb_query_stats_report();
	mccdb_table_sizes_reset();
	PG_RETURN_VOID();
}

/* Forget the matrix: adaptive behaves as MLS until one is loaded. */
Datum
mccdb_clear_interference(PG_FUNCTION_ARGS)
{
	mccdb_admission_require_shmem();
	lock_matrix_for_change();
	install_matrix(NULL);
	PG_RETURN_VOID();
}
