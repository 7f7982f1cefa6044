/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * access.h - the way of one data access through a core's caches and its
 * timing, in the one order both plugin/llcsim.c and the host test core
 * (test/core.h) follow, so that the host tests cannot drift from the
 * plugin:
 *
 *   1. the prefetcher learns the page's translation (user accesses only:
 *      the caller says whether to train);
 *   2. the L1: a hit ends the access, uncharged (its instruction's CPI
 *      covers it);
 *   3. the L2, when there is one: a hit is charged lat_l2;
 *   4. the LLC (the caller's lookup: locks, way masks): a hit, lat_llc;
 *   5. memory: lat_seq for the line after one of the core's 4 most recent
 *      LLC-missed lines, else lat_mem, either raised by the bandwidth term
 *      (bandwidth.h) from the traffic before this line, which then counts;
 *   6. after any L1 miss, the prefetcher (prefetch.h) may ask for lines:
 *      each not in the L2 goes into the L2 and the LLC, uncharged; one that
 *      missed the LLC is traffic.
 *
 * How an L1 miss is charged (the overlap model of timing.h or additive
 * time, counters, a grid of timings) is the caller's, through the charge
 * hook; where the LLC lives and how it is locked, through the llc hook.
 */
#ifndef LLCSIM_ACCESS_H
#define LLCSIM_ACCESS_H

#include <stdint.h>

#include "cachemodel.h"
#include "prefetch.h"
#include "bandwidth.h"

enum acc_level { ACC_L1, ACC_L2, ACC_LLC, ACC_MEM, ACC_SEQ };

struct acc_path {
	struct cm_cache *l1, *l2;	/* l2 NULL: no L2 */
	struct pf *pf;			/* NULL: no prefetcher */
	struct bw_model *bw;		/* NULL or peak 0: no contention */
	uint64_t *rng;			/* the core's, for random replacement */
	const uint64_t *clock;		/* the core's modeled clock, centicycles */
	uint64_t miss_line[4];		/* recent LLC-missed lines */
	unsigned int miss_pos;
	unsigned int line_shift;	/* of the LLC */
	uint64_t c_l2, c_llc, c_mem, c_seq;	/* centicycles */
	/* the LLC's lookup of pa (filled on a miss): 1 on a hit */
	int (*llc)(void *ctx, uint64_t pa);
	/* an L1 miss served by `level` after `lat` centicycles (`base` without
	 * the bandwidth term) */
	void (*charge)(void *ctx, enum acc_level level, uint64_t lat, uint64_t base);
	/* a line the prefetcher put into the LLC (or found there: llc_hit) */
	void (*prefetched)(void *ctx, int llc_hit);
};

static inline int acc_bw_on(const struct acc_path *p)
{
	return p->bw && p->bw->peak > 0;
}

/* The prefetcher's lines after an L1 miss at vaddr/pa. */
static inline void acc_prefetch(struct acc_path *p, void *ctx, uint64_t vaddr, uint64_t pa)
{
	uint64_t t[PF_MAX_DIST];
	unsigned int i, n = pf_miss(p->pf, vaddr, pa, t);

	for (i = 0; i < n; i++) {
		int hit;

		if (p->l2) {
			if (cm_probe(p->l2, t[i]))
				continue;
			cm_access(p->l2, t[i], p->rng);
		}
		hit = p->llc(ctx, t[i]);
		if (!hit && acc_bw_on(p))
			bw_add(p->bw, *p->clock);
		p->prefetched(ctx, hit);
	}
}

/* One access at vaddr/pa; train: the prefetcher may learn its translation.
 * Returns the level that served it. */
static inline enum acc_level acc_access(struct acc_path *p, void *ctx, uint64_t vaddr, uint64_t pa, int train)
{
	enum acc_level level;

	if (p->pf && train)
		pf_seen(p->pf, vaddr, pa);
	if (cm_access(p->l1, pa, p->rng))
		return ACC_L1;
	if (p->l2 && cm_access(p->l2, pa, p->rng)) {
		level = ACC_L2;
		p->charge(ctx, level, p->c_l2, p->c_l2);
	} else if (p->llc(ctx, pa)) {
		level = ACC_LLC;
		p->charge(ctx, level, p->c_llc, p->c_llc);
	} else {
		uint64_t line = pa >> p->line_shift, base, lat;
		int seq = 0, j;

		for (j = 0; j < 4; j++)
			seq |= p->miss_line[j] + 1 == line;
		p->miss_line[p->miss_pos++ & 3] = line;
		level = seq ? ACC_SEQ : ACC_MEM;
		base = lat = seq ? p->c_seq : p->c_mem;
		if (acc_bw_on(p)) {
			/* the memory's queue as every core's traffic left it */
			lat = bw_latency(p->bw, *p->clock, base);
			bw_add(p->bw, *p->clock);
		}
		p->charge(ctx, level, lat, base);
	}
	if (p->pf)
		acc_prefetch(p, ctx, vaddr, pa);
	return level;
}

#endif /* LLCSIM_ACCESS_H */
