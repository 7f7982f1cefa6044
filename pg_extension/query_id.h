/*-------------------------------------------------------------------------
 *
 * query_id.h
 *		Which statements mccdb asks PostgreSQL to identify.
 *
 * mccdb keys what it learns by query identifier, as pg_stat_statements
 * keys its entries, but it does not enable identifiers for every
 * statement: a point lookup would pay for a jumble nothing uses.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_QUERY_ID_H
#define MCCDB_QUERY_ID_H

/* The post-parse-analysis hook that computes the ids mccdb needs. */
extern void mccdb_query_id_init(void);

#endif							/* MCCDB_QUERY_ID_H */
