/*-------------------------------------------------------------------------
 *
 * counters.c
 *		Hardware counters per query: LLC misses, instructions and cycles,
 *		through perf_event_open(2) with events named through libpfm4 (the
 *		cache-miss sampling of the DaMoN 2009 seed paper, per query).
 *
 * With mccdb.counters on, a top-level query opens the three counters for
 * its own backend at ExecutorStart and reads them at ExecutorEnd; the
 * values appear in mccdb_recent_queries.  Where the kernel or the CPU
 * offers no PMU (virtual machines often do not), perf_event_open fails: the
 * query runs as usual, its counters are NULL, and the reason is logged once
 * per backend and shown by mccdb_counters_status().  A backend that found
 * no PMU (an event libpfm4 cannot encode, or perf_event_open refusing it in
 * a way another try would meet again) stops trying: its next statements
 * take the fast path, as with mccdb.counters off.  The events are encoded
 * once per backend: libpfm4 parses each name, some ten thousand
 * instructions, which every statement would otherwise pay.
 *
 * The counters belong to the statement: each open top-level statement
 * (a cursor stays open while other statements run) has file descriptors
 * of its own, counting the backend from its start to its end, so one
 * statement never closes or resets another's.  They are closed when the
 * statement's memory goes away, on every path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "counters.h"
#include "funcapi.h"
#include "state.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

/* GUC */
static bool count_queries = false;

/* libpfm4 names; the generic perf:: events exist on every CPU libpfm4 knows */
static const char *const event_names[MCCDB_NCOUNTERS] = {
	"perf::PERF_COUNT_HW_CACHE_MISSES",
	"perf::PERF_COUNT_HW_INSTRUCTIONS",
	"perf::PERF_COUNT_HW_CPU_CYCLES",
};

static bool pfm_ready = false;
static char unavailable[256] = "";	/* why counters cannot be read here */
static bool unavailable_logged = false;

/* event_names as perf_event_open takes them, once encoded */
static struct perf_event_attr event_attrs[MCCDB_NCOUNTERS];
static bool events_encoded = false;

/* no PMU for this backend: statements do not try again */
static bool counters_gone = false;

/* One statement's counters, in its memory context. */
typedef struct StatementCounters
{
	MccdbStatement *st;
	int			fds[MCCDB_NCOUNTERS];
	struct StatementCounters *next;
	MemoryContextCallback cb;
} StatementCounters;

/* The statements being counted, newest first. */
static StatementCounters *counting = NULL;

static bool
init_pfm(void)
{
	int			ret;

	if (pfm_ready)
		return true;
	ret = pfm_initialize();
	if (ret != PFM_SUCCESS)
	{
		snprintf(unavailable, sizeof(unavailable), "libpfm4: %s", pfm_strerror(ret));
		return false;
	}
	pfm_ready = true;
	return true;
}

/* Encode a libpfm4 event name into a perf_event_attr; NULL on success, else why. */
const char *
mccdb_counter_encode(const char *name, struct perf_event_attr *attr)
{
	pfm_perf_encode_arg_t arg;
	int			ret;

	if (!init_pfm())
		return unavailable;
	memset(attr, 0, sizeof(*attr));
	memset(&arg, 0, sizeof(arg));
	arg.attr = attr;
	arg.size = sizeof(arg);
	ret = pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
	if (ret != PFM_SUCCESS)
		return pfm_strerror(ret);
	attr->size = sizeof(*attr);
	return NULL;
}

static void
close_all(int fds[MCCDB_NCOUNTERS])
{
	int			i;

	for (i = 0; i < MCCDB_NCOUNTERS; i++)
		if (fds[i] >= 0)
		{
			close(fds[i]);
			fds[i] = -1;
		}
}

static void
note_unavailable(const char *why)
{
	strlcpy(unavailable, why, sizeof(unavailable));
	if (!unavailable_logged)
	{
		ereport(LOG,
				(errmsg("mccdb: hardware counters are unavailable: %s", unavailable),
				 errdetail("Queries run as usual; their counters in mccdb_recent_queries are NULL.")));
		unavailable_logged = true;
	}
}

/* Encode event_names into event_attrs, once per process. */
static bool
encode_events(void)
{
	int			i;

	if (events_encoded)
		return true;
	for (i = 0; i < MCCDB_NCOUNTERS; i++)
	{
		struct perf_event_attr *attr = &event_attrs[i];
		const char *err = mccdb_counter_encode(event_names[i], attr);

		if (err)
		{
			note_unavailable(psprintf("%s: %s", event_names[i], err));
			counters_gone = true;
			return false;
		}
		attr->disabled = 1;
		attr->exclude_kernel = 1;
		attr->exclude_hv = 1;
	}
	events_encoded = true;
	return true;
}

/*
 * perf_event_open's refusals that another try in this process would meet
 * again: no such event or PMU, not permitted (perf_event_paranoid), not
 * supported.  Running out of descriptors or a busy PMU may pass.
 */
static bool
refused_for_good(int err)
{
	return err == ENOENT || err == ENODEV || err == EOPNOTSUPP || err == EACCES ||
		err == EPERM || err == EINVAL;
}

/* Open and start the counters of this process into fds; false if unavailable. */
static bool
counters_start(int fds[MCCDB_NCOUNTERS])
{
	int			i;

	for (i = 0; i < MCCDB_NCOUNTERS; i++)
		fds[i] = -1;
	if (!encode_events())
		return false;
	for (i = 0; i < MCCDB_NCOUNTERS; i++)
	{
		fds[i] = (int) syscall(SYS_perf_event_open, &event_attrs[i], 0, -1, -1,
							   PERF_FLAG_FD_CLOEXEC);
		if (fds[i] < 0)
		{
			int			err = errno;

			counters_gone = refused_for_good(err);
			errno = err;
			note_unavailable(psprintf("perf_event_open(%s): %m", event_names[i]));
			close_all(fds);
			return false;
		}
	}
	counters_gone = false;
	for (i = 0; i < MCCDB_NCOUNTERS; i++)
	{
		ioctl(fds[i], PERF_EVENT_IOC_RESET, 0);
		ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
	}
	return true;
}

/* Stop, read and close fds; false if a value could not be read. */
static bool
counters_stop(int fds[MCCDB_NCOUNTERS], int64 values[MCCDB_NCOUNTERS])
{
	int			i;
	bool		ok = true;

	for (i = 0; i < MCCDB_NCOUNTERS; i++)
	{
		uint64		v = 0;

		ioctl(fds[i], PERF_EVENT_IOC_DISABLE, 0);
		if (read(fds[i], &v, sizeof(v)) != sizeof(v))
			ok = false;
		values[i] = (int64) v;
	}
	close_all(fds);
	return ok;
}

/* The statement's memory goes away (also on error): close what is open. */
static void
statement_counters_end(void *arg)
{
	StatementCounters *sc = (StatementCounters *) arg;
	StatementCounters **p;

	close_all(sc->fds);
	for (p = &counting; *p != NULL; p = &(*p)->next)
		if (*p == sc)
		{
			*p = sc->next;
			break;
		}
}

void
mccdb_counters_init(void)
{
	DefineCustomBoolVariable("mccdb.counters",
							 "Counts LLC misses, instructions and cycles per query (perf_event, libpfm4).",
							 "Where the PMU is not available the counters are NULL and the reason is logged once.",
							 &count_queries,
							 false,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

/* A top-level statement starts: count it, if mccdb.counters is on and the PMU may be there. */
bool
mccdb_counters_wanted(void)
{
	return count_queries && !counters_gone;
}

void
mccdb_counters_statement_start(MccdbStatement *st)
{
	StatementCounters *sc;

	if (!mccdb_counters_wanted())
		return;
	sc = MemoryContextAllocZero(st->cxt, sizeof(StatementCounters));
	sc->st = st;
	if (!counters_start(sc->fds))
		return;
	sc->cb.func = statement_counters_end;
	sc->cb.arg = sc;
	MemoryContextRegisterResetCallback(st->cxt, &sc->cb);
	sc->next = counting;
	counting = sc;
	st->counting = true;
}

/* Its executor ends: stop and keep the values for mccdb_recent_queries. */
void
mccdb_counters_statement_stop(MccdbStatement *st)
{
	StatementCounters *sc;

	if (!st->counting)
		return;
	st->counting = false;
	for (sc = counting; sc != NULL; sc = sc->next)
		if (sc->st == st)
		{
			st->have_counters = counters_stop(sc->fds, st->counters);
			break;
		}
}

PG_FUNCTION_INFO_V1(mccdb_counters_status);
PG_FUNCTION_INFO_V1(mccdb_counter_encoding);

/*
 * "available", or "unavailable: why".  It tries now, so the answer does not
 * depend on history: a backend whose statements stopped trying starts
 * again when this finds the counters there (perf_event_paranoid lowered).
 */
Datum
mccdb_counters_status(PG_FUNCTION_ARGS)
{
	int64		values[MCCDB_NCOUNTERS];
	int			fds[MCCDB_NCOUNTERS];

	mccdb_require_preload();
	if (counters_start(fds))
	{
		(void) counters_stop(fds, values);
		PG_RETURN_TEXT_P(cstring_to_text("available"));
	}
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("unavailable: %s", unavailable)));
}

/* How libpfm4 encodes an event name for perf_event_open: (type, config). */
Datum
mccdb_counter_encoding(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	struct perf_event_attr attr;
	const char *err;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {0};

	mccdb_require_preload();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	err = mccdb_counter_encode(name, &attr);
	if (err)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot encode hardware event \"%s\": %s", name, err),
				 errhint("Event names are libpfm4's, e.g. perf::PERF_COUNT_HW_CACHE_MISSES.")));
	values[0] = Int32GetDatum((int32) attr.type);
	values[1] = Int64GetDatum((int64) attr.config);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
