/*-------------------------------------------------------------------------
 *
 * workload_class.c
 *		Workload classes: each a queue of its own in the gate, with its own
 *		slots, priority, share of mccdb.memory_budget, queue timeout and
 *		short-query limit.  A DBA defines them in the table mccdb_class and
 *		assigns them with ALTER ROLE/DATABASE ... SET mccdb.class.
 *
 * The table is the definition (pg_dump keeps its rows); the gate reads its
 * copy in shared memory.  A deferred trigger reads the table when the
 * changing transaction commits, with the latest snapshot (so a concurrent
 * change that committed first is seen, whatever the isolation level), and
 * stages it; the transaction's PRE_COMMIT writes it to a file beside the
 * interference matrix, and its COMMIT renames the file into place and
 * installs the classes.  A change that aborts installs nothing.  Changes
 * are serialised by a transaction-level lock, so the last to commit read
 * every earlier one.  The postmaster reads the file at start, so the
 * classes survive a restart and a crash.
 *
 * The classes are the server's, as its settings are: with mccdb in several
 * databases, the table changed last is in force.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "compat.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "workload_class.h"

/* In the data directory, beside the interference matrix. */
#define CLASS_FILE "mccdb_classes.conf"
#define CLASS_FILE_TMP CLASS_FILE ".tmp"
#define CLASS_MAGIC "# mccdb workload classes 1"
/* the second line: "database OID", the database whose table they are */

char	   *mccdb_class_name = NULL;

PG_FUNCTION_INFO_V1(mccdb_class_changed);
PG_FUNCTION_INFO_V1(mccdb_load_classes);

/* Read at commit, installed at its end: this backend's pending change. */
static WorkloadClass pending[MCCDB_MAX_CLASSES];
static int	npending = 0;
static Oid	pending_dbid = InvalidOid;
static bool have_pending = false;
static SubTransactionId pending_subid = InvalidSubTransactionId;
static bool callbacks_registered = false;

static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* The class of a session that names none, and of a server that has none. */
static void
default_class(WorkloadClass *c)
{
	memset(c, 0, sizeof(*c));
	strlcpy(c->name, "default", NAMEDATALEN);
	c->queue_timeout_ms = -1;
	c->queue_timeout_action = -1;
	c->short_query_ms = -1;
}

/* What the table's CHECKs accept (a damaged file is refused on it). */
static bool
name_valid(const char *name)
{
	size_t		len = strlen(name);

	if (len == 0 || len >= 64 || isdigit((unsigned char) name[0]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(islower((unsigned char) name[i]) || isdigit((unsigned char) name[i]) ||
			  name[i] == '_'))
			return false;
	return true;
}

static bool
class_valid(const WorkloadClass *c)
{
	return name_valid(c->name) && c->slots >= 0 && c->slots <= 1024 &&
		c->priority >= -1000 && c->priority <= 1000 &&
		c->memory_share >= 0 && c->memory_share <= 100 &&
		c->queue_timeout_ms >= -1 &&
		c->queue_timeout_action >= -1 && c->queue_timeout_action <= MCCDB_QUEUE_TIMEOUT_RUN &&
		c->short_query_ms >= -1;
}

/*
 * The classes in order: default first (the table's row of that name, or
 * the built-in one), then the others as given.  Returns the count.
 */
static int
with_default_first(WorkloadClass *out, const WorkloadClass *in, int n)
{
	int			k = 1;

	default_class(&out[0]);
	for (int i = 0; i < n; i++)
	{
		if (strcmp(in[i].name, "default") == 0)
			out[0] = in[i];
		else
			out[k++] = in[i];
	}
	return k;
}

/*
 * Make defs (default first) the server's classes: a class keeps its
 * statistics through a change of its settings, and every statement in the
 * gate moves to its class's new place, or to default when its class is
 * gone.  Caller holds the lock.
 */
static void
install_locked(const WorkloadClass *defs, int n, Oid dbid, WorkloadClassStats *old_stats)
{
	WorkloadClass old[MCCDB_MAX_CLASSES];
	int			nold = mccdb_adm->nclasses;
	int			moved_to[MCCDB_MAX_CLASSES];

	memcpy(old, mccdb_adm->classes, sizeof(old));
	memcpy(old_stats, mccdb_adm->class_stats, sizeof(mccdb_adm->class_stats));
	memset(mccdb_adm->class_stats, 0, sizeof(mccdb_adm->class_stats));
	memcpy(mccdb_adm->classes, defs, sizeof(WorkloadClass) * n);
	mccdb_adm->nclasses = n;
	mccdb_adm->classes_dbid = dbid;
	for (int i = 0; i < nold; i++)
	{
		moved_to[i] = mccdb_workload_class_find(old[i].name);
		if (moved_to[i] >= 0)
			mccdb_adm->class_stats[moved_to[i]] = old_stats[i];
		else
			moved_to[i] = MCCDB_DEFAULT_CLASS;
	}
	for (int i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e->state != ENTRY_FREE && e->wclass < nold)
			e->wclass = moved_to[e->wclass];
		else
			e->wclass = MCCDB_DEFAULT_CLASS;
	}
}

static void
install(const WorkloadClass *defs, int n, Oid dbid)
{
	WorkloadClassStats *old_stats = palloc(sizeof(mccdb_adm->class_stats));

	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	install_locked(defs, n, dbid, old_stats);
	LWLockRelease(mccdb_adm->lock);
	pfree(old_stats);
	/* a waiter may now fit in its class */
	ConditionVariableBroadcast(&mccdb_adm->cv);
}

int
mccdb_workload_class_find(const char *name)
{
	if (name == NULL || name[0] == '\0')
		return MCCDB_DEFAULT_CLASS;
	for (int i = 0; i < mccdb_adm->nclasses; i++)
		if (strcmp(mccdb_adm->classes[i].name, name) == 0)
			return i;
	return -1;
}

void
mccdb_workload_class_admitted(int c, double wait_ms, bool starved)
{
	WorkloadClassStats *s = &mccdb_adm->class_stats[c];

	s->admitted++;
	s->starved += starved;
	s->wait_ms[s->next_wait] = (float4) wait_ms;
	s->next_wait = (s->next_wait + 1) % CLASS_WAIT_RING;
	s->nwaits = Min(s->nwaits + 1, CLASS_WAIT_RING);
}

/* ---- the file ---- */

/*
 * The file: a header line, the database whose table the classes are, then
 * one line per class other than a built-in default: name slots priority
 * memory_share queue_timeout_ms action short_query_ms.  Written to
 * CLASS_FILE_TMP, fsynced; renamed at commit.
 */
static void
write_class_file(const WorkloadClass *defs, int n, Oid dbid)
{
	StringInfoData buf;
	int			fd;

	initStringInfo(&buf);
	appendStringInfo(&buf, "%s\ndatabase %u\n", CLASS_MAGIC, dbid);
	for (int i = 0; i < n; i++)
		appendStringInfo(&buf, "%s %d %d %.17g %d %d %d\n", defs[i].name,
						 defs[i].slots, defs[i].priority, defs[i].memory_share,
						 defs[i].queue_timeout_ms, defs[i].queue_timeout_action,
						 defs[i].short_query_ms);
	fd = OpenTransientFile(CLASS_FILE_TMP, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create \"%s\": %m", CLASS_FILE_TMP)));
	errno = 0;
	if (write(fd, buf.data, buf.len) != buf.len || pg_fsync(fd) != 0)
	{
		int			save_errno = errno ? errno : ENOSPC;

		CloseTransientFile(fd);
		unlink(CLASS_FILE_TMP);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write \"%s\": %m", CLASS_FILE_TMP)));
	}
	if (CloseTransientFile(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close \"%s\": %m", CLASS_FILE_TMP)));
	pfree(buf.data);
}

/*
 * At start, in the postmaster: the classes the server had.  A damaged file
 * is ignored whole (LOG): every statement is then in default.
 */
static int
read_class_file(WorkloadClass *defs, Oid *dbid)
{
	FILE	   *f = AllocateFile(CLASS_FILE, "r");
	char		line[256];
	int			n = 0;
	bool		ok = true;

	if (f == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("mccdb: could not read \"%s\": %m", CLASS_FILE)));
		return 0;
	}
	if (fgets(line, sizeof(line), f) == NULL || strncmp(line, CLASS_MAGIC, strlen(CLASS_MAGIC)) != 0 ||
		fgets(line, sizeof(line), f) == NULL || sscanf(line, "database %u", dbid) != 1)
		ok = false;
	while (ok && fgets(line, sizeof(line), f) != NULL)
	{
		WorkloadClass c;
		char		extra;

		memset(&c, 0, sizeof(c));
		if (n >= MCCDB_MAX_CLASSES ||
			sscanf(line, "%63s %d %d %lf %d %d %d %c", c.name, &c.slots, &c.priority,
				   &c.memory_share, &c.queue_timeout_ms, &c.queue_timeout_action,
				   &c.short_query_ms, &extra) != 7 ||
			!class_valid(&c))
			ok = false;
		else
			defs[n++] = c;
	}
	FreeFile(f);
	if (!ok)
	{
		ereport(LOG,
				(errmsg("mccdb: ignoring malformed workload class file \"%s\": every statement is in class default",
						CLASS_FILE),
				 errhint("Run SELECT mccdb_load_classes() in the database whose mccdb_class holds the classes.")));
		return 0;
	}
	return n;
}

static void
workload_class_shmem_startup(void)
{
	WorkloadClass defs[MCCDB_MAX_CLASSES];
	WorkloadClass ordered[MCCDB_MAX_CLASSES];
	Oid			dbid = InvalidOid;
	int			n;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	if (IsUnderPostmaster || mccdb_adm == NULL)
		return;
	n = read_class_file(defs, &dbid);

	/*
	 * A backend that crashed between PRE_COMMIT and COMMIT left it.  Whether
	 * its transaction committed only the table can tell, which the
	 * postmaster cannot read: the DBA is told how to install it.
	 */
	if (unlink(CLASS_FILE_TMP) == 0)
		ereport(LOG,
				(errmsg("mccdb: a change of the workload classes was interrupted; the classes in force are those before it"),
				 errhint("If the change committed, SELECT mccdb_load_classes() in the database whose mccdb_class holds the classes installs it.")));
	else if (errno != ENOENT)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("mccdb: could not remove \"%s\": %m", CLASS_FILE_TMP)));
	mccdb_adm->classes_dbid = n > 0 ? dbid : InvalidOid;
	mccdb_adm->nclasses = with_default_first(ordered, defs, n);
	memcpy(mccdb_adm->classes, ordered, sizeof(WorkloadClass) * mccdb_adm->nclasses);
}

/* ---- the change: read at commit, installed at its end ---- */

static void
class_xact_callback(XactEvent event, void *arg)
{
	if (!have_pending)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			/* may still fail the transaction: then nothing changes */
			write_class_file(pending, npending, pending_dbid);
			break;
		case XACT_EVENT_COMMIT:
			/* the transaction is committed: nothing here may fail it */
			(void) durable_rename(CLASS_FILE_TMP, CLASS_FILE, LOG);
			{
				WorkloadClass ordered[MCCDB_MAX_CLASSES];
				int			n = with_default_first(ordered, pending, npending);

				install(ordered, n, pending_dbid);
			}
			have_pending = false;
			break;
		case XACT_EVENT_PRE_PREPARE:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot PREPARE a transaction that changed mccdb_class"),
					 errhint("Change the workload classes in a transaction of their own.")));
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			unlink(CLASS_FILE_TMP);
			have_pending = false;
			break;
		default:
			break;
	}
}

static void
class_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	if (!have_pending || pending_subid != mySubid)
		return;
	if (event == SUBXACT_EVENT_COMMIT_SUB)
		pending_subid = parentSubid;
	else if (event == SUBXACT_EVENT_ABORT_SUB)
		have_pending = false;
}

/* Install these classes when this transaction commits. */
static void
stage(int n, Oid dbid)
{
	npending = n;
	pending_dbid = dbid;
	have_pending = true;
	pending_subid = GetCurrentSubTransactionId();
	if (!callbacks_registered)
	{
		RegisterXactCallback(class_xact_callback, NULL);
		RegisterSubXactCallback(class_subxact_callback, NULL);
		callbacks_registered = true;
	}
}

/*
 * Changes of the classes one at a time, to the end of the transaction:
 * each reads the table after the one before has committed and installed
 * its own.  An advisory lock of database 0 with objsubid 3 in pg_locks
 * (user advisory locks use 1 and 2).
 */
static void
lock_classes_for_change(void)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, InvalidOid, 0x6d636364, 0x636c6173, 3);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

static int
compare_class_names(const void *a, const void *b)
{
	return strcmp(((const WorkloadClass *) a)->name, ((const WorkloadClass *) b)->name);
}

/* An int column that NULL leaves to the server's setting (-1 or 0). */
static int
int_or(HeapTuple tup, TupleDesc desc, int col, int null_value)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? null_value : DatumGetInt32(d);
}

/*
 * Read relid (the table mccdb_class) with the latest snapshot into
 * pending, to be installed when this transaction commits.  Returns the
 * number of rows.
 */
static int
stage_classes(Oid relid)
{
	char	   *relname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													 get_rel_name(relid));
	StringInfoData sql;
	SPIPlanPtr	plan;
	int			n,
				others = 0;

	lock_classes_for_change();
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT name, slots, priority, memory_share, queue_timeout, "
					 "queue_timeout_action, short_query FROM %s", relname);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(sql.data, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	/*
	 * What committed before the lock was granted, and this transaction's
	 * own changes: an autocommitted statement's too, which the command
	 * counter makes visible.
	 */
	CommandCounterIncrement();
	if (SPI_execute_snapshot(plan, NULL, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_snapshot failed");
	/* default may be one of the rows: it takes no place of its own */
	n = (int) Min(SPI_processed, (uint64) MCCDB_MAX_CLASSES + 1);
	for (int i = 0; i < n; i++)
		others += strcmp(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1),
						 "default") != 0;
	if (SPI_processed > MCCDB_MAX_CLASSES || others > MCCDB_MAX_CLASSES - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("mccdb_class has more than %d classes besides default",
						MCCDB_MAX_CLASSES - 1),
				 errhint("Merge classes: roles with the same limits can share one.")));
	n = (int) SPI_processed;
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		WorkloadClass *c = &pending[i];
		char	   *action = SPI_getvalue(tup, desc, 6);
		bool		isnull;
		Datum		share;

		memset(c, 0, sizeof(*c));
		strlcpy(c->name, SPI_getvalue(tup, desc, 1), NAMEDATALEN);
		c->slots = int_or(tup, desc, 2, 0);
		c->priority = int_or(tup, desc, 3, 0);
		share = SPI_getbinval(tup, desc, 4, &isnull);
		c->memory_share = isnull ? 0 : DatumGetFloat8(share);
		c->queue_timeout_ms = int_or(tup, desc, 5, -1);
		c->queue_timeout_action = action == NULL ? -1 :
			strcmp(action, "run") == 0 ? MCCDB_QUEUE_TIMEOUT_RUN : MCCDB_QUEUE_TIMEOUT_ERROR;
		c->short_query_ms = int_or(tup, desc, 7, -1);
		/* the table's CHECKs; a table altered past them is refused */
		if (!class_valid(c))
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("workload class \"%s\" in mccdb_class is not valid", c->name),
					 errhint("Restore the table's CHECK constraints (ALTER EXTENSION mccdb UPDATE does not) or correct the row.")));
	}
	SPI_finish();
	/* sorted here, not by ORDER BY: no operator the session's search_path finds */
	qsort(pending, n, sizeof(WorkloadClass), compare_class_names);
	stage(n, MyDatabaseId);
	return n;
}

/*
 * The trigger of mccdb_class: deferred, it fires at commit for each changed
 * row; each reads the whole table (a few rows), the last read is
 * installed.  TRUNCATE fires no row trigger: it is refused.
 */
Datum
mccdb_class_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("mccdb_class_changed() must be called as a trigger")));
	if (TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("TRUNCATE of mccdb_class is not supported"),
				 errhint("Use DELETE FROM mccdb_class: the classes change when it commits.")));
	mccdb_admission_require_shmem();
	(void) stage_classes(RelationGetRelid(trigdata->tg_relation));
	return PointerGetDatum(NULL);
}

/*
 * Load this database's mccdb_class into the server when this transaction
 * commits: after a restore with triggers disabled, or to make this
 * database's classes the server's again.
 */
Datum
mccdb_load_classes(PG_FUNCTION_ARGS)
{
	Oid			relid = InvalidOid;
	bool		isnull;

	mccdb_admission_require_shmem();
	/* the extension's own table, wherever its schema is */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT c.oid FROM pg_catalog.pg_extension e "
					"JOIN pg_catalog.pg_class c "
					"ON c.relnamespace OPERATOR(pg_catalog.=) e.extnamespace "
					"WHERE e.extname OPERATOR(pg_catalog.=) 'mccdb' "
					"AND c.relname OPERATOR(pg_catalog.=) 'mccdb_class'",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute failed");
	if (SPI_processed == 1)
		relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table mccdb_class does not exist"),
				 errhint("Run ALTER EXTENSION mccdb UPDATE.")));
	PG_RETURN_INT32(stage_classes(relid));
}

void
mccdb_workload_class_source_dropped(Oid dbid)
{
	bool		theirs;

	if (mccdb_adm == NULL)
		return;
	lock_classes_for_change();
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	theirs = OidIsValid(dbid) && mccdb_adm->classes_dbid == dbid;
	LWLockRelease(mccdb_adm->lock);
	if (theirs)
		stage(0, InvalidOid);
}

/* mccdb.class: a name the table could hold, or empty. */
static bool
check_class_name(char **newval, void **extra, GucSource source)
{
	if (**newval != '\0' && !name_valid(*newval))
	{
		GUC_check_errdetail("A workload class name is lower-case letters, digits and underscores, starting with a letter or underscore, at most 63 bytes.");
		return false;
	}
	return true;
}

void
mccdb_workload_class_init(void)
{
	DefineCustomStringVariable("mccdb.class",
							   "The workload class (a row of mccdb_class) of this session's statements in the gate.",
							   "Empty is class default. Superuser-only: set it per role or database with ALTER ROLE/DATABASE ... SET.",
							   &mccdb_class_name,
							   "",
							   PGC_SUSET, 0,
							   check_class_name, NULL, NULL);
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = workload_class_shmem_startup;
}
