/*-------------------------------------------------------------------------
 *
 * plan_key.c
 *		A key that names a plan and every copy of it (see plan_key.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "plan_key.h"
#include "plan_tree.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

static uint64
hash_double(double d)
{
	return hash_bytes_extended((const unsigned char *) &d, sizeof(d), 0);
}

static bool
add_shape(Plan *plan, void *context)
{
	uint64	   *h = context;

	check_stack_depth();
	*h = hash_combine64(*h, (uint64) nodeTag(plan));
	*h = hash_combine64(*h, (uint64) plan->plan_node_id);
	*h = hash_combine64(*h, hash_double(plan->startup_cost));
	*h = hash_combine64(*h, hash_double(plan->total_cost));
	*h = hash_combine64(*h, hash_double(plan->plan_rows));
	*h = hash_combine64(*h, (uint64) plan->plan_width);
	return mccdb_plan_children_walk(plan, add_shape, h);
}

MccdbPlanKey
mccdb_plan_key(const PlannedStmt *plan)
{
	MccdbPlanKey key;

	/* zeroed whole: the key's padding is hashed too */
	memset(&key, 0, sizeof(key));
	key.queryid = plan->queryId;
	if (plan->planTree != NULL)
		(void) add_shape(plan->planTree, &key.shape);
	return key;
}

struct MccdbPlanMemo
{
	HTAB	   *table;
	Size		payload_size;
	long		capacity;
	uint64		clock;
};

typedef struct MemoEntry
{
	MccdbPlanKey key;
	uint64		last_used;
	/* then payload_size bytes, MAXALIGNed */
} MemoEntry;

#define MEMO_PAYLOAD(e) ((char *) (e) + MAXALIGN(sizeof(MemoEntry)))

MccdbPlanMemo *
mccdb_plan_memo_create(const char *name, Size payload_size, long capacity)
{
	MccdbPlanMemo *memo = MemoryContextAllocZero(TopMemoryContext, sizeof(MccdbPlanMemo));
	HASHCTL		info;

	info.keysize = sizeof(MccdbPlanKey);
	info.entrysize = MAXALIGN(sizeof(MemoEntry)) + payload_size;
	info.hcxt = TopMemoryContext;
	memo->table = hash_create(name, 64, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	memo->payload_size = payload_size;
	memo->capacity = capacity;
	return memo;
}

void *
mccdb_plan_memo_find(MccdbPlanMemo *memo, const MccdbPlanKey *key)
{
	MemoEntry  *e = hash_search(memo->table, key, HASH_FIND, NULL);

	if (e == NULL)
		return NULL;
	e->last_used = ++memo->clock;
	return MEMO_PAYLOAD(e);
}

void *
mccdb_plan_memo_enter(MccdbPlanMemo *memo, const MccdbPlanKey *key)
{
	MemoEntry  *e;
	bool		found;

	if (hash_get_num_entries(memo->table) >= memo->capacity &&
		hash_search(memo->table, key, HASH_FIND, NULL) == NULL)
	{
		HASH_SEQ_STATUS seq;
		MemoEntry  *oldest = NULL;

		hash_seq_init(&seq, memo->table);
		while ((e = hash_seq_search(&seq)) != NULL)
			if (oldest == NULL || e->last_used < oldest->last_used)
				oldest = e;
		(void) hash_search(memo->table, &oldest->key, HASH_REMOVE, NULL);
	}
	e = hash_search(memo->table, key, HASH_ENTER, &found);
	if (!found)
		memset(MEMO_PAYLOAD(e), 0, memo->payload_size);
	e->last_used = ++memo->clock;
	return MEMO_PAYLOAD(e);
}

void
mccdb_plan_memo_forget(MccdbPlanMemo *memo, const MccdbPlanKey *key)
{
	(void) hash_search(memo->table, key, HASH_REMOVE, NULL);
}

bool
mccdb_plan_memo_empty(const MccdbPlanMemo *memo)
{
	return hash_get_num_entries(memo->table) == 0;
}
