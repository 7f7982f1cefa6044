/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * access.h - the way of one data access through a core's caches and its
 * timing, in the one order both plugin/llcsim.c and the host test core
 * (test/core.h) follow, so that the host tests cannot drift from the
 * plugin:
 *
 *   1. the prefetcher learns the page's translation (user accesses only:
 *      the caller says whether to train);
 *   1a. with a TLB model (tlb.h), the translation: an L1 DTLB hit is free,
 *      an L2 DTLB (STLB) hit costs c_stlb, a miss walks the page table:
 *      c_stlb + the walk's own cost + its leaf entry's load, which goes
 *      through the L2, the LLC and memory (the bandwidth term, traffic) as
 *      a data load would, but not the L1 (AMD's table walker reads through
 *      the L2).  The translation's time is added to the access's latency
 *      (the data load issues when its translation is done: in the overlap
 *      model a dependent access), and an access that then hits the L1 is
 *      charged it alone (level ACC_L1);
 *   2. the L1: a hit ends the access, uncharged unless its translation cost
 *      (its instruction's CPI covers the rest);
 *   3. the L2, when there is one: a hit is charged lat_l2;
 *   4. the LLC (the caller's lookup: locks, way masks): a hit, lat_llc;
 *   5. memory: lat_seq for the line after one of the core's 4 most recent
 *      LLC-missed lines, else lat_mem, either raised by the bandwidth term
 *      (bandwidth.h) from the traffic before this line, which then counts;
 *   6. after any L1 miss, the prefetcher (prefetch.h) may ask for lines:
 *      each not in the L2 goes into the L2 and the LLC, uncharged; one that
 *      missed the LLC is traffic, and with a fill rate (c_fill) it arrives
 *      when the core's fill path has room for it: one line every c_fill
 *      after the one before.  The prefetcher runs far enough ahead that a
 *      fill's latency is hidden (the calibrated stream alone is bound by its
 *      instructions, as natively); what it cannot beat is the rate at which
 *      a core takes lines from memory, the native stream's.  A demand access
 *      that finds such a line in the L2 or the LLC before it arrived waits
 *      for it (its level's latency plus the wait, through the charge hook).
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
#include "tlb.h"

/* prefetch fills from memory a core keeps track of (a power of two, at
 * least PF_MAX_DIST: a stream's lines take distinct slots) */
#define ACC_PEND 64

enum acc_level { ACC_L1, ACC_L2, ACC_LLC, ACC_MEM, ACC_SEQ };

struct acc_path {
	struct cm_cache *l1, *l2;	/* l2 NULL: no L2 */
	struct pf *pf;			/* NULL: no prefetcher */
	struct bw_model *bw;		/* NULL or peak 0: no contention */
	struct tlb *tlb;		/* NULL: no TLB model (translation free) */
	uint64_t xlat;			/* the access under way: its translation, centicycles */
	uint64_t *rng;			/* the core's, for random replacement */
	const uint64_t *clock;		/* the core's modeled clock, centicycles */
	uint64_t miss_line[4];		/* recent LLC-missed lines */
	unsigned int miss_pos;
	unsigned int line_shift;	/* of the LLC */
	uint64_t c_l2, c_llc, c_mem, c_seq;	/* centicycles */
	uint64_t c_fill;		/* a prefetch fill from memory every c_fill at most; 0: no limit */
	uint64_t fill_free;		/* when the fill path takes its next line */
	struct acc_pend {
		uint64_t line;		/* physical line + 1; 0: none */
		uint64_t ready;		/* when it arrives (centicycles) */
	} pend[ACC_PEND];		/* paced prefetch fills, by line */
	/* the LLC's lookup of pa (filled on a miss; pf: by the prefetcher):
	 * 1 on a hit */
	int (*llc)(void *ctx, uint64_t pa, int pf);
	/* an L1 miss served by `level` after `lat` centicycles (`base` without
	 * the bandwidth term, or for ACC_L2 and ACC_LLC without the wait for a
	 * paced prefetch fill), both with the translation's p->xlat; ACC_L1: an
	 * L1 hit whose translation took lat = p->xlat */
	void (*charge)(void *ctx, enum acc_level level, uint64_t lat, uint64_t base);
	/* a translation that missed the L1 DTLB (tlb != NULL): TLB_STLB, or
	 * TLB_WALK whose leaf load `leaf` served (ACC_L2, ACC_LLC, ACC_MEM) */
	void (*xlated)(void *ctx, enum tlb_result r, enum acc_level leaf, int huge);
	/* a line the prefetcher put into the LLC (or found there: llc_hit) */
	void (*prefetched)(void *ctx, int llc_hit);
};

static inline int acc_bw_on(const struct acc_path *p)
{
	return p->bw && p->bw->peak > 0;
}

/* A prefetch fill from memory wanted at t: when it arrives, the fill
 * path taking one line every c_fill (t itself without a limit). */
static inline uint64_t acc_fill_at(struct acc_path *p, uint64_t t)
{
	uint64_t at;

	if (!p->c_fill)
		return t;
	at = t > p->fill_free ? t : p->fill_free;
	p->fill_free = at + p->c_fill;
	return at;
}

/* The wait (centicycles) of a demand access at the core's clock for its
 * line pa, found in the L2 or the LLC: until a paced fill arrives (none
 * without a fill rate). */
static inline uint64_t acc_pend_wait(struct acc_path *p, uint64_t pa)
{
	uint64_t line = pa >> p->line_shift, now = *p->clock;
	struct acc_pend *e = &p->pend[line & (ACC_PEND - 1)];

	if (!p->c_fill)
		return 0;
	return e->line == line + 1 && e->ready > now ? e->ready - now : 0;
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
		hit = p->llc(ctx, t[i], 1);
		if (!hit) {
			uint64_t line = t[i] >> p->line_shift, at = acc_fill_at(p, *p->clock);

			if (at > *p->clock)
				p->pend[line & (ACC_PEND - 1)] = (struct acc_pend){ line + 1, at };
			if (acc_bw_on(p))
				bw_add(p->bw, at);
		}
		p->prefetched(ctx, hit);
	}
}

/* The translation of vaddr (on the page pa says): centicycles it takes. */
static inline uint64_t acc_translate(struct acc_path *p, void *ctx, uint64_t vaddr, uint64_t pa)
{
	int huge = tlb_huge(vaddr, pa);
	enum tlb_result r = tlb_lookup(p->tlb, vaddr, huge);
	enum acc_level leaf;
	uint64_t lpa, lat;

	if (r == TLB_HIT)
		return 0;
	if (r == TLB_STLB) {
		p->xlated(ctx, r, ACC_L1, huge);
		return p->tlb->c_stlb;
	}
	lpa = tlb_leaf(vaddr, huge);
	if (p->l2 && cm_access(p->l2, lpa, p->rng)) {
		leaf = ACC_L2;
		lat = p->c_l2;
	} else if (p->llc(ctx, lpa, 0)) {
		leaf = ACC_LLC;
		lat = p->c_llc;
	} else {
		leaf = ACC_MEM;
		lat = p->c_mem;
		if (acc_bw_on(p)) {
			lat = bw_latency(p->bw, *p->clock, lat);
			bw_add(p->bw, *p->clock);
		}
	}
	p->xlated(ctx, r, leaf, huge);
	return p->tlb->c_stlb + p->tlb->c_walk + lat;
}

/* One access at vaddr/pa; train: the prefetcher may learn its translation.
 * Returns the level that served it. */
static inline enum acc_level acc_access(struct acc_path *p, void *ctx, uint64_t vaddr, uint64_t pa, int train)
{
	enum acc_level level;
	uint64_t x, w;

	if (p->pf && train)
		pf_seen(p->pf, vaddr, pa);
	x = p->xlat = p->tlb ? acc_translate(p, ctx, vaddr, pa) : 0;
	if (cm_access(p->l1, pa, p->rng)) {
		if (x)
			p->charge(ctx, ACC_L1, x, x);
		return ACC_L1;
	}
	if (p->l2 && cm_access(p->l2, pa, p->rng)) {
		level = ACC_L2;
		w = acc_pend_wait(p, pa);
		p->charge(ctx, level, p->c_l2 + x + w, p->c_l2 + x);
	} else if (p->llc(ctx, pa, 0)) {
		level = ACC_LLC;
		w = acc_pend_wait(p, pa);
		p->charge(ctx, level, p->c_llc + x + w, p->c_llc + x);
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
		p->charge(ctx, level, lat + x, base + x);
	}
	if (p->pf)
		acc_prefetch(p, ctx, vaddr, pa);
	return level;
}

#endif /* LLCSIM_ACCESS_H */
