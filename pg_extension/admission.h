/*-------------------------------------------------------------------------
 *
 * admission.h
 *		Co-scheduling: which queries run together (MCC-DB sections 5.2, 6.3).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_ADMISSION_H
#define MCCDB_ADMISSION_H

#include "executor/execdesc.h"
#include "locality.h"
#include "state.h"

typedef enum MccdbSchedule
{
	MCCDB_SCHEDULE_OFF,			/* admit everything at once: stock behaviour */
	MCCDB_SCHEDULE_SLS,			/* co-run queries of the same queue */
	MCCDB_SCHEDULE_MLS,			/* co-run one of each queue */
	MCCDB_SCHEDULE_ADAPTIVE,	/* minimise the measured predicted slowdown */
	MCCDB_SCHEDULE_PREDICTIVE,	/* work-conserving: learned run times and interference */
	MCCDB_SCHEDULE_SHORTEST		/* work-conserving: short queries at once, then highest
								 * response ratio */
} MccdbSchedule;

/* The paper's two queues: strong/moderate locality, and weak. */
#define MCCDB_QUEUE_OF(cls) ((cls) == MCCDB_WEAK ? 1 : 0)

/* GUCs (mccdb.schedule, corun_slots, max_wait, schedule_min_cost, client_stall), shared memory. */
extern void mccdb_admission_init(void);
/* After it: what the gate learned, read back when shared memory is made (learned.c). */
extern void mccdb_learned_init(void);
extern const char *mccdb_schedule_name(MccdbSchedule policy);

/*
 * Run a statement through the gate: wait until the scheduler admits it
 * (each run: the first, and each FETCH of a cursor), run it, lend its slots
 * until it runs again.
 */
extern void mccdb_admission_run(MccdbStatement *st, ScanDirection direction,
								uint64 count, bool execute_once,
								void (*run) (QueryDesc *, ScanDirection, uint64, bool));

/*
 * Might the gate stand in front of this run?  Cheap: compares, and the
 * plan's price under the server's settings only when the gate is on; no
 * lock, no catalog.
 */
extern bool mccdb_gate_wants(QueryDesc *queryDesc);

/* Before ExecutorStart: a plan's parallel workers cut to what a domain holds. */
extern void mccdb_gate_narrow_plan(QueryDesc *queryDesc);

/* A run the gate let pass: counted for a query it admitted before. */
extern void mccdb_admission_count_bypass(QueryDesc *queryDesc);

/* The statement ends (ExecutorEnd): give its slots back. */
extern void mccdb_admission_statement_end(MccdbStatement *st);

/* DISCARD ALL: end this session's hold, as it ends its advisory locks. */
extern void mccdb_admission_discard(void);

/*
 * In a parallel worker, at its ExecutorStart: run in the leader's
 * last-level-cache domain, counted in its leader's slots.
 */
extern void mccdb_admission_parallel_worker_start(QueryDesc *queryDesc);

/* In a parallel worker whose run is over: its slot back to the waiters. */
extern void mccdb_admission_parallel_worker_end(void);

/* Live counts of waiting + running queries per queue, for MLS plan choice. */
extern void mccdb_admission_queue_counts(int *strong_moderate, int *weak);

#endif							/* MCCDB_ADMISSION_H */
