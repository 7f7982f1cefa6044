/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core.h - one simulated core for host tests: the plugin's L1/L2/LLC
 * (cachemodel.h), stride prefetcher (prefetch.h), miss-overlap timing
 * (timing.h) and memory-bandwidth contention (bandwidth.h, shared by the
 * cores given the same struct bw_model), an access going through them in
 * the plugin's own order (plugin/access.h, which plugin/llcsim.c uses too),
 * fed with synthetic accesses, and its data TLBs (tlb.h) when given
 * (core_set_tlb).  Virtual pages map to scattered 4 KiB frames, as a
 * guest's do, or with core_set_huge() to 2 MiB frames (transparent huge
 * pages: virtual and physical addresses agree in their low 21 bits).
 */
#ifndef LLCSIM_TEST_CORE_H
#define LLCSIM_TEST_CORE_H

#include <stdint.h>
#include <stdlib.h>

#include "../plugin/cachemodel.h"
#include "../plugin/prefetch.h"
#include "../plugin/timing.h"
#include "../plugin/bandwidth.h"
#include "../plugin/tlb.h"
#include "../plugin/access.h"

struct core {
	struct cm_cache l1, l2, llc;
	struct pf pf;
	struct tm_core tm;
	struct tlb tlb;
	struct acc_path path;		/* plugin/access.h: the order of an access */
	uint64_t rng, clock, icount;	/* clock: centicycles */
	uint64_t c_cpi, c_l2, c_llc, c_mem;
	uint64_t l1m, l2h, llch, mem, pf_fill, pf_mem;
	uint64_t pfw, pfwait;		/* accesses that waited for a paced prefetch fill, centicycles */
	uint64_t stlb, walks, walk_l2, walk_llc, walk_mem, walk_huge, xlat_l1;	/* translations (tlb.h) */
	int huge;			/* data on 2 MiB frames */
	uint64_t va, val;		/* the access under way (for the overlap model) */
	uint64_t *frame;		/* virtual page -> frame */
	uint64_t npages;
};

/* access.h's hooks: the core's own LLC, its counters, its timing */
static inline int core_llc(void *ctx, uint64_t pa, int pf)
{
	struct core *c = ctx;

	return cm_access_pf(&c->llc, pa, &c->rng, CM_ALL_WAYS, pf);
}

static inline void core_charge(void *ctx, enum acc_level level, uint64_t lat, uint64_t base)
{
	struct core *c = ctx;

	if (level == ACC_L1) {		/* an L1 hit's translation */
		c->xlat_l1++;
		c->clock += c->tm.rob ? tm_stall(&c->tm, c->clock, c->icount, c->va, c->val, lat) : lat;
		return;
	}
	c->l1m++;
	c->l2h += level == ACC_L2;
	c->llch += level == ACC_LLC;
	if (level == ACC_L2 || level == ACC_LLC) {
		c->pfw += lat > base;
		c->pfwait += lat - base;
	}
	c->mem += level >= ACC_MEM;
	c->clock += c->tm.rob ? tm_stall(&c->tm, c->clock, c->icount, c->va, c->val, lat) : lat;
}

static inline void core_xlated(void *ctx, enum tlb_result r, enum acc_level leaf, int huge)
{
	struct core *c = ctx;

	c->stlb += r == TLB_STLB;
	c->walks += r == TLB_WALK;
	c->walk_l2 += r == TLB_WALK && leaf == ACC_L2;
	c->walk_llc += r == TLB_WALK && leaf == ACC_LLC;
	c->walk_mem += r == TLB_WALK && leaf == ACC_MEM;
	c->walk_huge += r == TLB_WALK && huge;
}

static inline void core_prefetched(void *ctx, int llc_hit)
{
	struct core *c = ctx;

	c->pf_fill++;
	c->pf_mem += !llc_hit;
}

/* A core with the plugin's default geometry; pages: virtual pages mapped
 * (to distinct random frames below 4 GiB). rob = 0: additive timing. */
static inline int core_init(struct core *c, uint64_t npages, unsigned int pf, unsigned int xbits,
			    uint64_t rob, unsigned int mshr, double cpi)
{
	uint64_t i, nframes = 1 << 20, *pool;

	memset(c, 0, sizeof(*c));
	if (cm_init(&c->l1, 32 << 10, 8, 64, CM_LRU) || cm_init(&c->l2, 256 << 10, 8, 64, CM_LRU) ||
	    cm_init(&c->llc, 2 << 20, 16, 64, CM_LRU) || pf_init(&c->pf, pf, 16, xbits))
		return -1;
	c->rng = 88172645463325252ULL;
	c->tm.rob = rob;
	c->tm.mshr = mshr;
	c->c_cpi = (uint64_t)(cpi * 100 + 0.5);
	c->c_l2 = 1200;
	c->c_llc = 4000;
	c->c_mem = 20000;
	c->path = (struct acc_path){
		.l1 = &c->l1, .l2 = &c->l2, .pf = pf ? &c->pf : NULL, .rng = &c->rng, .clock = &c->clock,
		.line_shift = c->llc.line_shift, .c_l2 = c->c_l2, .c_llc = c->c_llc, .c_mem = c->c_mem,
		.c_seq = c->c_mem,	/* the calibrated profile's LAT_SEQ = lat_mem */
		.llc = core_llc, .charge = core_charge, .prefetched = core_prefetched, .xlated = core_xlated,
	};
	c->npages = npages;
	c->frame = malloc(npages * sizeof(*c->frame));
	pool = malloc(nframes * sizeof(*pool));
	if (!c->frame || !pool || npages > nframes - 256)
		return -1;
	for (i = 0; i < nframes; i++)
		pool[i] = i;
	for (i = 0; i < npages; i++) {	/* partial Fisher-Yates, frames 256.. */
		uint64_t j = i + cm_xorshift(&c->rng) % (nframes - 256 - i), t = pool[256 + i];

		pool[256 + i] = pool[256 + j];
		pool[256 + j] = t;
		c->frame[i] = pool[256 + i];
	}
	free(pool);
	return 0;
}

/* The memory the core shares with others (bandwidth.h); NULL: none. */
static inline void core_set_bw(struct core *c, struct bw_model *m)
{
	c->path.bw = m;
}

/* Data TLBs (tlb.h): entries and ways (0: fully associative) of the L1
 * and L2 DTLB, cycles of an STLB hit and of a walk beyond its leaf load. */
static inline int core_set_tlb(struct core *c, uint32_t dtlb, uint32_t dtlb_ways, uint32_t stlb,
			       uint32_t stlb_ways, double lat_stlb, double lat_walk)
{
	if (tlb_init(&c->tlb, dtlb, dtlb_ways, stlb, stlb_ways, (uint64_t)(lat_stlb * 100 + 0.5),
		     (uint64_t)(lat_walk * 100 + 0.5)))
		return -1;
	c->path.tlb = &c->tlb;
	return 0;
}

/* The data on 2 MiB frames from now on (in order, from 32 MiB up). */
static inline void core_set_huge(struct core *c)
{
	c->huge = 1;
}

static inline void core_free(struct core *c)
{
	if (c->path.tlb)
		tlb_free(&c->tlb);
	cm_free(&c->l1);
	cm_free(&c->l2);
	cm_free(&c->llc);
	pf_free(&c->pf);
	free(c->frame);
}

static inline uint64_t core_pa(const struct core *c, uint64_t va)
{
	if (c->huge)
		return (16 + (va >> 21) % (c->npages >> 9 | 1)) << 21 | (va & TLB_HUGE_MASK);
	return c->frame[(va >> 12) % c->npages] << 12 | (va & 4095);
}

static inline void core_insns(struct core *c, unsigned int n)
{
	uint64_t st = c->tm.rob ? tm_retire(&c->tm, c->clock, c->icount, n, c->c_cpi) : 0;

	c->icount += n;
	c->clock += n * c->c_cpi + st;
}

/* A load at va that read val (a pointer, or 0): a user access, as the
 * guest's loops are. */
static inline void core_load(struct core *c, uint64_t va, uint64_t val)
{
	c->va = va;
	c->val = val;
	acc_access(&c->path, c, va, core_pa(c, va), 1);
}

#endif /* LLCSIM_TEST_CORE_H */
