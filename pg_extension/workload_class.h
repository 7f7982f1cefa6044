/*-------------------------------------------------------------------------
 *
 * workload_class.h
 *		Workload classes: the DBA's table mccdb_class, loaded into the gate's
 *		shared memory when a change commits, kept in the data directory
 *		across restarts, and the session's class (mccdb.class).
 *
 * A layer of the gate (gate_state.h) between gate_state.c, which it calls,
 * and policy.c and gate.c, which read the classes it installs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_WORKLOAD_CLASS_H
#define MCCDB_WORKLOAD_CLASS_H

#include "gate_state.h"

/* mccdb.class: the session's class; empty is default.  Superuser-only. */
extern char *mccdb_class_name;

/* GUC and shared memory start-up; after mccdb_admission_init(). */
extern void mccdb_workload_class_init(void);

/* The class named, or -1; caller holds the lock. */
extern int	mccdb_workload_class_find(const char *name);

/*
 * DROP EXTENSION mccdb in this database, or DROP DATABASE of dbid, has
 * succeeded: when the classes in force are that database's table, they go
 * when the transaction commits (the server is left with default only).
 */
extern void mccdb_workload_class_source_dropped(Oid dbid);

/* An admission of class c after waiting ms; caller holds the lock. */
extern void mccdb_workload_class_admitted(int c, double wait_ms, bool starved);

#endif							/* MCCDB_WORKLOAD_CLASS_H */
