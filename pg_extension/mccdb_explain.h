/*-------------------------------------------------------------------------
 *
 * mccdb_explain.h
 *		The locality, and the candidate plans, in EXPLAIN output.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_MCCDB_EXPLAIN_H
#define MCCDB_MCCDB_EXPLAIN_H

#include "state.h"

/* The GUC mccdb.explain and the ExplainOneQuery hook. */
extern void mccdb_explain_init(void);

/* Is this the plan an EXPLAIN in progress shows? */
extern bool mccdb_explain_wants(QueryDesc *queryDesc);

/* Print the statement's locality (and candidates) into that EXPLAIN. */
extern void mccdb_explain_statement_end(MccdbStatement *st);

#endif							/* MCCDB_MCCDB_EXPLAIN_H */
