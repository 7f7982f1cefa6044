/*-------------------------------------------------------------------------
 *
 * policy.c
 *		Which waiting query the gate admits next, and in which last-level-
 *		cache domain (MCC-DB sections 5.2 and 6.3; placement beyond it).
 *
 * Policies (mccdb.mccdb_schedule):
 *	sls		co-run queries of the same queue; strong/moderate first, smallest
 *			hash tables first;
 *	mls		co-run one query of each queue (as SLS when one queue is empty);
 *	adaptive	admit the waiter that minimises the predicted slowdown of the
 *			running set, from an interference matrix measured on the host;
 *	predictive	never leave a slot idle while a query waits; among the
 *			waiters predicted compatible with the running set, the longest
 *			first; run times and interference learned online (model.c);
 *	shortest	never leave a slot idle while a query waits; a query
 *			predicted to run at most mccdb.short_query alone runs at once,
 *			beside the others, as long as fewer short queries run that way
 *			than there are slots and no long query has waited its own
 *			predicted run time; among the rest, the highest response ratio
 *			(waited + predicted) / predicted first: short queries first,
 *			and a long one's priority grows while it waits, so none waits
 *			without bound (with clients that wait for their answers,
 *			throughput is clients over mean response time, which shortest
 *			first keeps low);
 *	off		admit everything (stock behaviour).
 *
 * Every function here reads the shared state under the gate's lock, which
 * the caller holds, and changes nothing: the choice is deterministic in that
 * state, so every waiter that evaluates it agrees on one name.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "gate_state.h"
#include "cache_geometry.h"
#include "utils/memutils.h"

/* Predictive: a waiter adding at most this much work is compatible. */
#define COMPATIBLE_LIMIT 0.10

/* The LLC domains the gate places queries in: 1 without placement. */
int
mccdb_gate_domains(void)
{
	return mccdb_placement ? mccdb_topology()->ndomains : 1;
}

/*
 * Slots of domain d: mccdb.corun_slots, or its CPUs.  With one domain, as
 * before there were domains: mccdb.corun_slots or the CPUs sharing cpu0's
 * LLC.
 */
int
mccdb_domain_slots(int d)
{
	int			cpus;

	if (mccdb_corun_slots > 0)
		return mccdb_corun_slots;
	cpus = mccdb_gate_domains() == 1 ? mccdb_cache_geometry()->shared_cpus :
		mccdb_topology()->domains[d].ncpus;
	return Max(cpus, 1);
}

/* Slots in use at once, in all domains. */
int
mccdb_total_slots(void)
{
	int			n = 0;

	for (int d = 0; d < mccdb_gate_domains(); d++)
		n += mccdb_domain_slots(d);
	return n;
}

/* The most slots one query can take: those of the largest domain. */
int
mccdb_max_query_slots(void)
{
	int			n = 0;

	for (int d = 0; d < mccdb_gate_domains(); d++)
		n = Max(n, mccdb_domain_slots(d));
	return n;
}

/*
 * The domain e would run in now (model_place), or -1 when none has room
 * for it; with must, the one with the most free slots then.  Caller holds
 * the lock.
 */
int
mccdb_place_locked(AdmissionEntry *e, bool must)
{
	ModelDomain domains[MCCDB_MAX_LLC_DOMAINS];
	double		m[MODEL_CLASSES][MODEL_CLASSES];
	int			nd = mccdb_gate_domains(),
				d;

	for (d = 0; d < nd; d++)
	{
		domains[d].free_slots = mccdb_domain_slots(d) - mccdb_adm->counts.domain_used[d];
		memset(domains[d].running, 0, sizeof(domains[d].running));
	}
	for (int i = 0; i < mccdb_adm->nentries; i++)
		if (mccdb_adm->entries[i].state == ENTRY_RUNNING)
			domains[mccdb_adm->entries[i].domain].running[mccdb_adm->entries[i].cls]++;
	mccdb_role_matrix(e->userid, m);
	d = model_place(domains, nd, e->cls, Min(e->slots, mccdb_max_query_slots()),
					(const double (*)[MODEL_CLASSES]) m);
	/* else where its leader fits: it runs with the workers that fit there */
	if (d < 0 && e->slots > 1)
		d = model_place(domains, nd, e->cls, 1, (const double (*)[MODEL_CLASSES]) m);
	if (d < 0 && must)
	{
		d = 0;
		for (int i = 1; i < nd; i++)
			if (domains[i].free_slots > domains[d].free_slots)
				d = i;
	}
	return d;
}

/*
 * The working memory the admitted statements hold (mccdb.memory_budget):
 * the running ones', and the lent ones' (a cursor between fetches and a
 * stalled client keep their hash tables).  Caller holds the lock.
 */
MemoryInUse
mccdb_memory_in_use(void)
{
	MemoryInUse use;

	memset(&use, 0, sizeof(use));
	for (int i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e->state == ENTRY_RUNNING)
		{
			use.running_kb += e->memory_kb;
			use.class_running_kb[e->wclass] += e->memory_kb;
		}
		else if (e->state == ENTRY_LENT)
		{
			use.lent_kb += e->memory_kb;
			use.class_lent_kb[e->wclass] += e->memory_kb;
		}
	}
	return use;
}

/*
 * Does e fit in the budget beside the admitted statements?  A statement
 * that needs none always does; one over the budget fits when no admitted
 * statement holds any (it runs alone).  A waiter past mccdb.max_wait
 * (starving) needs room beside the running statements only: a lent
 * statement's memory is held at its client's pace, and the gate never
 * waits on a client.
 */
static bool
fits_memory(const AdmissionEntry *e, const MemoryInUse *use, bool starving)
{
	int64		used = use->running_kb + (starving ? 0 : use->lent_kb);

	return mccdb_memory_budget_kb <= 0 || e->memory_kb == 0 || used == 0 ||
		used + e->memory_kb <= mccdb_memory_budget_kb;
}

/*
 * The slots each workload class's running statements take, in every lane
 * but the lock lane (which no class limit holds back).  Caller holds the
 * lock.
 */
void
mccdb_class_slots_in_use(int class_slots[MCCDB_MAX_CLASSES])
{
	memset(class_slots, 0, sizeof(int) * MCCDB_MAX_CLASSES);
	for (int i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e->state == ENTRY_RUNNING && e->lane != LANE_LOCKS)
			class_slots[e->wclass] += e->slots;
	}
}

/*
 * One pick's view of the waiters (mccdb_pick_next): the memory and the
 * class slots in use, and the priority level of workload classes whose
 * waiters the policy may pick this round.
 */
typedef struct PickContext
{
	MemoryInUse use;
	int			class_slots[MCCDB_MAX_CLASSES]; /* of running statements, all lanes but locks */
	int			level;			/* the classes' priority this round */
} PickContext;

/*
 * Does e fit in its workload class: its slots, and its share of the
 * memory budget?  As with the gate's slots, a statement goes when its
 * class has a slot free for its leader, and runs with the parallel workers
 * that fit in the class; as with the budget, a starving waiter needs room
 * beside the running statements only.
 */
static bool
fits_class(const AdmissionEntry *e, const PickContext *pc, bool starving)
{
	const WorkloadClass *wc = &mccdb_adm->classes[e->wclass];

	if (wc->slots > 0 && pc->class_slots[e->wclass] >= wc->slots)
		return false;
	if (mccdb_memory_budget_kb > 0 && wc->memory_share > 0 && e->memory_kb > 0)
	{
		int64		share = (int64) (mccdb_memory_budget_kb * wc->memory_share / 100.0);
		int64		used = pc->use.class_running_kb[e->wclass] +
			(starving ? 0 : pc->use.class_lent_kb[e->wclass]);

		if (used > 0 && used + e->memory_kb > share)
			return false;
	}
	return true;
}

/* May the policy pick e this round: waiting, in the round's classes, and fits? */
static bool
pickable(const AdmissionEntry *e, const PickContext *pc)
{
	return e->state == ENTRY_WAITING &&
		mccdb_adm->classes[e->wclass].priority == pc->level &&
		fits_memory(e, &pc->use, false) && fits_class(e, pc, false);
}

/* Predicted slowdown (sum of factors - 1) of a candidate joining the running set. */
static double
predicted_slowdown(int cls)
{
	double		s = 0;
	int			i;

	for (i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *r = &mccdb_adm->entries[i];

		if (r->state != ENTRY_RUNNING)
			continue;
		s += mccdb_adm->interference[r->cls][cls] - 1.0;
		s += mccdb_adm->interference[cls][r->cls] - 1.0;
	}
	return s;
}

/*
 * Is a better than b as the next query of the given queue?  The
 * strong/moderate queue takes the smallest hash tables first (SLS), the
 * weak queue goes in arrival order.
 */
static bool
better_in_queue(AdmissionEntry *a, AdmissionEntry *b)
{
	if (b == NULL)
		return true;
	if (MCCDB_QUEUE_OF(a->cls) == 0 && a->bytes != b->bytes)
		return a->bytes < b->bytes;
	return a->seq < b->seq;
}

/*
 * The predictive policy's view of the queue, one element per backend so
 * that no waiter or running query is ever left out.  Allocated once per
 * backend before the lock is taken: nothing is allocated under it.
 */
static ModelQuery *scratch_waiting = NULL;
static ModelQuery *scratch_running = NULL;
static AdmissionEntry **scratch_waiters = NULL;
static double (*scratch_matrices)[MODEL_CLASSES][MODEL_CLASSES] = NULL;	/* each waiter's role's */

void
mccdb_policy_prepare(void)
{
	if (scratch_waiting != NULL)
		return;
	scratch_waiting = MemoryContextAlloc(TopMemoryContext,
										 sizeof(ModelQuery) * mccdb_adm->nentries);
	scratch_running = MemoryContextAlloc(TopMemoryContext,
										 sizeof(ModelQuery) * mccdb_adm->nentries);
	scratch_waiters = MemoryContextAlloc(TopMemoryContext,
										 sizeof(AdmissionEntry *) * mccdb_adm->nentries);
	scratch_matrices = MemoryContextAlloc(TopMemoryContext,
										  sizeof(*scratch_matrices) * mccdb_adm->nentries);
}

/*
 * The predictive policy's choice (model_pick), each waiter judged by its
 * own role's learned matrix; caller holds the lock.
 */
static AdmissionEntry *
pick_predictive(int slots, int64 now_us, const PickContext *pc)
{
	double		since_change_ms = (double) (now_us - mccdb_adm->last_change_us) / 1000.0;
	int			nw = 0,
				nr = 0,
				i,
				pick;

	Assert(scratch_waiting != NULL);
	for (i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e->state == ENTRY_WAITING)
		{
			if (!pickable(e, pc))
				continue;
			scratch_waiters[nw] = e;
			mccdb_role_matrix(e->userid, scratch_matrices[nw]);
			/* it goes when its leader fits, with the workers that fit */
			scratch_waiting[nw] = (ModelQuery) {e->cls, e->predicted, (long) e->seq, 1,
			(const double (*)[MODEL_CLASSES]) scratch_matrices[nw]};
			nw++;
		}
		else if (e->state == ENTRY_RUNNING)
		{
			double		elapsed = (e->run_ms + since_change_ms) / 1000.0;

			scratch_running[nr++] = (ModelQuery) {e->cls,
				Max(e->predicted - elapsed, 0.05 * e->predicted), (long) e->seq, e->slots};
		}
	}
	/* every waiter has its own matrix: model_pick's shared one is never read */
	pick = model_pick(scratch_waiting, nw, scratch_running, nr,
					  (const double (*)[MODEL_CLASSES]) scratch_matrices[0],
					  slots - mccdb_adm->counts.used_slots, COMPATIBLE_LIMIT);
	return pick < 0 ? NULL : scratch_waiters[pick];
}

/*
 * The shortest policy's choice; caller holds the lock.
 *
 * A short query (predicted to run at most mccdb.short_query alone) runs at
 * once, beside the admitted queries, in the short lane: at most as many
 * short queries run that way as there are slots, so a stream of them can
 * neither take the CPUs nor starve the rest.  A waiter that has waited as
 * long as it is predicted to run is due: while one is, no further short
 * query goes at once, and the due waiters get the free slots first.  Among
 * the rest, the highest response ratio (waited + predicted) / predicted
 * first.  A waiter goes when a domain has a slot free for its leader, and
 * runs with the parallel workers that fit beside it (work-conserving: a
 * parallel query never keeps a free slot idle while it waits for as many as
 * it planned).  So a long query
 * waits at most about its own predicted run time, then for the queries
 * running when it fell due to free a slot.  A waiter that does not fit in
 * the memory budget or its class is not picked either (mccdb.max_wait
 * bounds its wait).  A class's short_query replaces mccdb.short_query for
 * its statements.
 */
static AdmissionEntry *
pick_shortest(int64 now_us, const PickContext *pc, bool *at_once)
{
	AdmissionEntry *best = NULL;
	AdmissionEntry *oldest_short = NULL;
	double		best_ratio = 0;
	bool		best_due = false;
	bool		any_due = false;
	int			max_free = 0;

	for (int d = 0; d < mccdb_gate_domains(); d++)
		max_free = Max(max_free, mccdb_domain_slots(d) - mccdb_adm->counts.domain_used[d]);
	for (int i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];
		double		waited,
					predicted,
					ratio;
		bool		is_short,
					due;
		int			short_ms;

		if (!pickable(e, pc))
			continue;
		short_ms = mccdb_adm->classes[e->wclass].short_query_ms;
		if (short_ms < 0)
			short_ms = mccdb_short_query_ms;
		waited = (double) (now_us - e->since_us) / 1e6;
		predicted = Max(e->predicted, 1e-3);
		is_short = e->predicted * 1000.0 <= short_ms;
		due = !is_short && waited >= predicted;
		any_due |= due;
		if (is_short && (oldest_short == NULL || e->seq < oldest_short->seq))
			oldest_short = e;
		if (max_free < 1)
			continue;
		ratio = (waited + predicted) / predicted;
		if (best == NULL || (due && !best_due) ||
			(due == best_due && (ratio > best_ratio ||
								 (ratio == best_ratio && e->seq < best->seq))))
		{
			best = e;
			best_ratio = ratio;
			best_due = due;
		}
	}
	if (oldest_short != NULL && !any_due && mccdb_adm->counts.short_used < mccdb_total_slots())
	{
		*at_once = true;
		return oldest_short;
	}
	return best;
}

/*
 * The policy's choice among the waiters of one priority level of workload
 * classes (pc->level); caller holds the lock.
 */
static AdmissionEntry *pick_by_queues(const PickContext *pc);

static AdmissionEntry *
pick_in_level(int64 now_us, const PickContext *pc, EntryLane *lane)
{
	AdmissionEntry *choice = NULL;
	MccdbSchedule policy = (MccdbSchedule) mccdb_schedule;

	if (policy == MCCDB_SCHEDULE_PREDICTIVE)
		choice = pick_predictive(mccdb_total_slots(), now_us, pc);
	else if (policy == MCCDB_SCHEDULE_SHORTEST)
	{
		bool		at_once = false;

		choice = pick_shortest(now_us, pc, &at_once);
		/* a short query runs beside the others, in the short lane */
		if (at_once)
		{
			*lane = LANE_SHORT;
			return choice;
		}
	}
	else
		choice = pick_by_queues(pc);
	if (choice != NULL && mccdb_place_locked(choice, false) < 0)
		return NULL;
	return choice;
}

/*
 * The paper's policies (SLS, MLS) and adaptive: the best waiter of each of
 * the two locality queues, then which queue goes.
 */
static AdmissionEntry *
pick_by_queues(const PickContext *pc)
{
	int			running[2] = {0, 0};
	AdmissionEntry *best[2] = {NULL, NULL};
	AdmissionEntry *choice = NULL;
	MccdbSchedule policy = (MccdbSchedule) mccdb_schedule;
	int			i;

	for (i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];
		int			q = MCCDB_QUEUE_OF(e->cls);

		if (e->state == ENTRY_RUNNING)
			running[q]++;
		/* the best of each queue among the waiters that fit */
		else if (pickable(e, pc) && better_in_queue(e, best[q]))
			best[q] = e;
	}

	if (policy == MCCDB_SCHEDULE_ADAPTIVE && mccdb_adm->have_matrix)
	{
		double		best_cost = 0;

		for (i = 0; i < 2; i++)
		{
			double		c;

			if (best[i] == NULL)
				continue;
			c = predicted_slowdown(best[i]->cls);
			if (choice == NULL || c < best_cost ||
				(c == best_cost && best[i]->seq < choice->seq))
			{
				choice = best[i];
				best_cost = c;
			}
		}
	}
	else if (policy == MCCDB_SCHEDULE_SLS)
	{
		if (running[0] + running[1] == 0)
			choice = best[0] ? best[0] : best[1];
		else if (running[1] == 0)
			choice = best[0];	/* strong/moderate running: only them */
		else if (running[0] == 0)
			choice = best[1];	/* weak running: only weak */
		else
			choice = (best[0] && (!best[1] || best[0]->seq < best[1]->seq)) ? best[0] : best[1];
	}
	else
	{
		/* MLS, and adaptive without a matrix: balance the two queues */
		if (running[0] <= running[1])
			choice = best[0] ? best[0] : best[1];
		else
			choice = best[1] ? best[1] : best[0];
	}
	return choice;
}

/*
 * The waiting entry to admit now, or NULL.  Deterministic in the shared
 * state, so every waiter agrees; caller holds the lock.
 *
 * Only a waiter that fits in the memory budget and in its workload class
 * (slots, memory share) is picked.  The oldest such waiter past
 * mccdb.max_wait goes first, whatever its class, and while it does not fit
 * in the budget nobody goes, so that the running statements drain and it
 * never starves.  Otherwise the classes go by priority, highest first: the
 * policy picks among the waiters of the highest level that has one it can
 * admit now, and a lower level's waiter goes only when no higher one can.
 */
AdmissionEntry *
mccdb_pick_next(int64 now_us, EntryLane *lane)
{
	PickContext pc;
	AdmissionEntry *starving = NULL;
	bool		class_waits[MCCDB_MAX_CLASSES] = {false};
	int			i;

	*lane = LANE_SLOTS;
	memset(&pc, 0, sizeof(pc));
	pc.use = mccdb_memory_in_use();
	mccdb_class_slots_in_use(pc.class_slots);
	for (i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e->state != ENTRY_WAITING)
			continue;
		class_waits[e->wclass] = true;
		if (now_us - e->since_us >= (int64) mccdb_max_wait_ms * 1000 &&
			fits_class(e, &pc, true) &&
			(starving == NULL || e->seq < starving->seq))
			starving = e;
	}

	if (starving)
	{
		if (!fits_memory(starving, &pc.use, true) ||
			mccdb_place_locked(starving, false) < 0)
			return NULL;
		return starving;
	}
	if (mccdb_adm->held_by != 0)
		return NULL;
	/* each level once, highest first: the next below the last one tried */
	for (int level = INT_MAX;;)
	{
		AdmissionEntry *choice;
		bool		found = false;

		for (int c = 0; c < mccdb_adm->nclasses; c++)
			if (class_waits[c] && mccdb_adm->classes[c].priority < level &&
				(!found || mccdb_adm->classes[c].priority > pc.level))
			{
				pc.level = mccdb_adm->classes[c].priority;
				found = true;
			}
		if (!found)
			return NULL;
		level = pc.level;
		if ((choice = pick_in_level(now_us, &pc, lane)) != NULL)
			return choice;
		*lane = LANE_SLOTS;
	}
}
