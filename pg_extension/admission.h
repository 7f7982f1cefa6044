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

typedef enum MccdbSchedule
{
	MCCDB_SCHEDULE_OFF,			/* admit everything at once: stock behaviour */
	MCCDB_SCHEDULE_SLS,			/* co-run queries of the same queue */
	MCCDB_SCHEDULE_MLS,			/* co-run one of each queue */
	MCCDB_SCHEDULE_ADAPTIVE		/* minimise the measured predicted slowdown */
} MccdbSchedule;

/* The paper's two queues: strong/moderate locality, and weak. */
#define MCCDB_QUEUE_OF(cls) ((cls) == MCCDB_WEAK ? 1 : 0)

/* What admission decided for the query now running in this backend. */
typedef struct MccdbAdmission
{
	bool		gated;			/* went through the gate (else bypassed) */
	int64		admit_seq;		/* order of admission, from 1 */
	TimestampTz admitted;
	TimestampTz released;		/* when the run ended and the slots were freed */
	double		waited_ms;
} MccdbAdmission;

extern void mccdb_admission_install(void);

/*
 * Wait until the scheduler admits this query, then run it; the slot is
 * given back when the run ends, by error or otherwise.
 */
extern void mccdb_admission_run(QueryDesc *queryDesc, ScanDirection direction,
								uint64 count, bool execute_once,
								void (*run) (QueryDesc *, ScanDirection, uint64, bool));

/* Live counts of waiting + running queries per queue, for MLS plan choice. */
extern void mccdb_admission_queue_counts(int *strong_moderate, int *weak);

/* The last admission of this backend, for mccdb_recent_queries. */
extern const MccdbAdmission *mccdb_admission_last(void);

#endif							/* MCCDB_ADMISSION_H */
