/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host unit test of the llcsim cache model (plugin/cachemodel.h), TAP output.
 * Runs in well under a second.  Every check compares with an answer known
 * independently of the model (hand-worked sequences, a naive reference LRU,
 * analytic results for cyclic sweeps).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../plugin/cachemodel.h"
#include "loops.h"

static int ntest, nfail;

static void ok(int cond, const char *fmt, const char *name, double a, double b)
{
	ntest++;
	if (!cond)
		nfail++;
	printf("%s %d - %s", cond ? "ok" : "not ok", ntest, name);
	if (fmt) {
		printf(" (");
		printf(fmt, a, b);
		printf(")");
	}
	printf("\n");
}

/* Naive reference: timestamps, evict the oldest. */
struct ref {
	uint32_t sets, ways, shift;
	uint64_t *tag, *ts, clock;
};

static void ref_init(struct ref *r, uint64_t size, uint32_t ways, uint32_t line)
{
	r->ways = ways;
	r->sets = (uint32_t)(size / ways / line);
	r->shift = (uint32_t)__builtin_ctz(line);
	r->tag = calloc((size_t)r->sets * ways, 8);
	r->ts = calloc((size_t)r->sets * ways, 8);
	r->clock = 0;
}

static int ref_access(struct ref *r, uint64_t addr)
{
	uint64_t ln = addr >> r->shift;
	uint32_t s = (uint32_t)(ln % r->sets), w, old = 0;
	uint64_t *t = r->tag + (size_t)s * r->ways, *ts = r->ts + (size_t)s * r->ways;

	r->clock++;
	for (w = 0; w < r->ways; w++) {
		if (t[w] == ln + 1) {
			ts[w] = r->clock;
			return 1;
		}
	}
	for (w = 1; w < r->ways; w++)
		if (ts[w] < ts[old])
			old = w;
	t[old] = ln + 1;
	ts[old] = r->clock;
	return 0;
}

/*
 * The reference with a way mask (CAT): a hit anywhere; a miss fills the
 * invalid way of the mask with the highest index (the order in which the
 * model's slots start), else the mask's oldest way.
 */
static int ref_access_ways(struct ref *r, uint64_t addr, uint64_t mask)
{
	uint64_t ln = addr >> r->shift;
	uint32_t s = (uint32_t)(ln % r->sets), w;
	int victim = -1;
	uint64_t *t = r->tag + (size_t)s * r->ways, *ts = r->ts + (size_t)s * r->ways;

	r->clock++;
	for (w = 0; w < r->ways; w++) {
		if (t[w] == ln + 1) {
			ts[w] = r->clock;
			return 1;
		}
	}
	for (w = r->ways; w-- > 0;)
		if ((mask >> w & 1) && !t[w]) {
			victim = (int)w;
			break;
		}
	if (victim < 0)
		for (w = 0; w < r->ways; w++)
			if ((mask >> w & 1) && (victim < 0 || ts[w] < ts[victim]))
				victim = (int)w;
	t[victim] = ln + 1;
	ts[victim] = r->clock;
	return 0;
}

/* Hit rate of a cyclic sweep over `bytes` (stride `line`) after one warm
 * pass, filling only the ways in `ways`. */
static double cyclic_hit_rate_ways(struct cm_cache *c, uint64_t base, uint64_t bytes, int passes,
				   uint64_t ways)
{
	uint64_t rng = 12345, hits = 0, n = 0, a;
	int p;

	cm_flush(c);
	for (a = 0; a < bytes; a += c->line)
		cm_access_ways(c, base + a, &rng, ways);
	for (p = 0; p < passes; p++)
		for (a = 0; a < bytes; a += c->line, n++)
			hits += (uint64_t)cm_access_ways(c, base + a, &rng, ways);
	return (double)hits / (double)n;
}

/* Random accesses to a 32 KiB 8-way cache: how often a lookup's answer
 * disagrees with cm_probe() before it, or the line is absent after it. */
static double bw_u_lag[2];	/* test 52, measured beside 32-37 */

static int hit_iff_present(enum cm_repl repl)
{
	struct cm_cache c;
	uint64_t rng = 1;
	int bad = 0;

	cm_init(&c, 32 << 10, 8, 64, repl);
	for (int i = 0; i < 100000; i++) {
		uint64_t a = (cm_xorshift(&rng) % (1 << 20)) & ~63ull;
		int pres = cm_probe(&c, a);

		bad += pres != cm_access(&c, a, &rng) || !cm_probe(&c, a);
	}
	cm_free(&c);
	return bad;
}

static double cyclic_hit_rate(struct cm_cache *c, uint64_t base, uint64_t bytes, int passes)
{
	return cyclic_hit_rate_ways(c, base, bytes, passes, CM_ALL_WAYS);
}

/* Physical address of page `i` of a range whose pages have colours in
 * [c0, c0 + nc): page frames chosen round-robin over those colours. */
static uint64_t colored_page(uint64_t i, int c0, int nc, int ncolors)
{
	uint64_t round = i / (uint64_t)nc;
	uint64_t color = (uint64_t)c0 + i % (uint64_t)nc;
	return ((round + 1000) * (uint64_t)ncolors + color) << 12;
}

/* The latencies a core's misses and translations added up to (cycles):
 * the levels, an STLB hit 7, a walk 7 + 30 + its leaf's level (tests 40, 43). */
static double latencies(const struct core *k)
{
	return (double)k->mem * 200 + (double)k->llch * 40 + (double)k->l2h * 12 + (double)k->stlb * 7 +
	       (double)k->walks * 37 + (double)k->walk_l2 * 12 + (double)k->walk_llc * 40 + (double)k->walk_mem * 200;
}

/*
 * Test 49's resident quarter (512 KiB, hit once a round) between streams of
 * 4x a 2 MiB LLC, prefetch fills (pf) or demand fills: the share of the
 * quarter's accesses after the first round that hit.
 */
static double quarter_kept(struct cm_cache *c, uint64_t *rng, int pf)
{
	uint64_t a, s, h = 0, n = 0, base = 1ull << 30, sbase = 2ull << 30;

	cm_flush(c);
	for (a = 0; a < (512 << 10); a += 64)
		cm_access(c, base + a, rng);
	for (int v = 0; v < 5; v++) {
		for (a = 0; a < (512 << 10); a += 64, n += v > 0)
			h += (uint64_t)cm_access(c, base + a, rng) * (v > 0);
		for (s = 0; s < (8u << 20); s += 64)
			cm_access_pf(c, sbase + (uint64_t)v * (8u << 20) + s, rng, CM_ALL_WAYS, pf);
	}
	return (double)h / (double)n;
}

int main(void)
{
	struct cm_cache c;
	uint64_t rng = 1;
	int i, hits;

	printf("TAP version 13\n1..59\n");

	/* 1-2: geometry */
	i = cm_init(&c, 2 << 20, 16, 64, CM_LRU);
	ok(i == 0 && c.sets == 2048 && c.line_shift == 6,
	   "%g sets, want %g", "2 MiB 16-way 64 B: 2048 sets", c.sets, 2048);
	ok(c.size / (c.ways * 4096ull) == 32, NULL, "2 MiB 16-way: 32 page colours", 0, 0);
	cm_free(&c);
	{
		struct cm_cache bad;
		ok(cm_init(&bad, 3 << 20, 16, 64, CM_LRU) != 0 &&
		   cm_init(&bad, 2 << 20, 16, 48, CM_LRU) != 0 &&
		   cm_init(&bad, 2 << 20, 0, 64, CM_LRU) != 0,
		   NULL, "bad geometries rejected", 0, 0);
	}

	/* 4: hand-worked LRU sequence in one 4-way set */
	cm_init(&c, 4 * 64 * 16, 4, 64, CM_LRU);	/* 16 sets */
	{
		uint64_t S = 16 * 64;	/* same set stride */
		uint64_t A = 0, B = S, C = 2 * S, D = 3 * S, E = 4 * S;
		int r = 0;
		r |= cm_access(&c, A, &rng) << 0;
		r |= cm_access(&c, B, &rng) << 1;
		r |= cm_access(&c, C, &rng) << 2;
		r |= cm_access(&c, D, &rng) << 3;
		r |= cm_access(&c, A + 8, &rng) << 4;	/* hit, same line; A becomes MRU */
		r |= cm_access(&c, E, &rng) << 5;	/* miss, evicts B (LRU) */
		ok(r == (1 << 4) && cm_probe(&c, A) && !cm_probe(&c, B) && cm_probe(&c, C) &&
		   cm_probe(&c, D) && cm_probe(&c, E) && !cm_probe(&c, 64),
		   NULL, "LRU: A B C D A E evicts B, keeps A C D E, other sets untouched", 0, 0);
	}
	cm_free(&c);

	/* 5: model == naive reference LRU on a random trace */
	{
		struct ref r;
		uint64_t s = 99, a;
		long mism = 0, h = 0;
		cm_init(&c, 64 << 10, 8, 64, CM_LRU);
		ref_init(&r, 64 << 10, 8, 64);
		for (i = 0; i < 2000000; i++) {
			a = (cm_xorshift(&s) % (256 << 10)) & ~7ull;
			int x = cm_access(&c, a, &rng), y = ref_access(&r, a);
			mism += x != y;
			h += x;
		}
		ok(mism == 0 && h > 0, "%g mismatches, %g hits", "LRU equals naive reference on 2M random accesses",
		   (double)mism, (double)h);
		cm_free(&c);
	}

	/* 6-8: cyclic sweeps with LRU: fits -> all hits, 2x -> no hits */
	cm_init(&c, 2 << 20, 16, 64, CM_LRU);
	{
		double h05 = cyclic_hit_rate(&c, 1 << 30, 1 << 20, 2);
		double h10 = cyclic_hit_rate(&c, 1 << 30, 2 << 20, 2);
		double h11 = cyclic_hit_rate(&c, 1 << 30, (2 << 20) + (2 << 20) / 8, 2);
		double h20 = cyclic_hit_rate(&c, 1 << 30, 4 << 20, 2);
		ok(h05 == 1.0, "hit rate %g, want %g", "LRU cyclic 0.5x capacity: all hits", h05, 1);
		ok(h10 == 1.0, "hit rate %g, want %g", "LRU cyclic 1.0x capacity (contiguous): all hits", h10, 1);
		ok(h11 == 0.0 && h20 == 0.0, "1.125x %g, 2x %g", "LRU cyclic >1x capacity: no hits (LRU thrashes)", h11, h20);
	}
	cm_free(&c);

	/* 9: random replacement keeps some lines on a 1.5x cyclic sweep */
	cm_init(&c, 2 << 20, 16, 64, CM_RANDOM);
	{
		double h = cyclic_hit_rate(&c, 1 << 30, 3 << 20, 4);
		ok(h > 0.2 && h < 0.8, "hit rate %g (%g)", "random replacement: 1.5x cyclic sweep partly hits", h, 0);
	}
	cm_free(&c);

	/* 10: set index ignores bits above the set field; colour = page bits in the index */
	cm_init(&c, 2 << 20, 16, 64, CM_LRU);
	ok(cm_set_of(&c, 0x12345040) == cm_set_of(&c, 0x12345040 + (2 << 20) / 16) &&
	   (cm_set_of(&c, 5ull << 12) >> 6) == 5 && (cm_set_of(&c, 37ull << 12) >> 6) == 5,
	   NULL, "set index: stride size/ways aliases; page colour = (pfn mod 32) selects 64-set group", 0, 0);

	/* 11-12: page colouring: disjoint colours isolate, shared colours do not */
	{
		uint64_t vpages = 128, spages = 8192, p, a;	/* victim 512 KiB, stream 32 MiB */
		int col_v0 = 0, ncol_v = 16;
		double hd, hs;
		/* disjoint: victim colours 0-15, stream colours 16-31 */
		cm_flush(&c);
		for (p = 0; p < vpages; p++)
			for (a = 0; a < 4096; a += 64)
				cm_access(&c, colored_page(p, col_v0, ncol_v, 32) + a, &rng);
		for (p = 0; p < spages; p++)
			for (a = 0; a < 4096; a += 64)
				cm_access(&c, colored_page(p, 16, 16, 32) + a, &rng);
		hits = 0;
		for (p = 0; p < vpages; p++)
			for (a = 0; a < 4096; a += 64)
				hits += cm_probe(&c, colored_page(p, col_v0, ncol_v, 32) + a);
		hd = hits / (double)(vpages * 64);
		/* shared: stream in the victim's colours 0-15 */
		cm_flush(&c);
		for (p = 0; p < vpages; p++)
			for (a = 0; a < 4096; a += 64)
				cm_access(&c, colored_page(p, col_v0, ncol_v, 32) + a, &rng);
		for (p = 0; p < spages; p++)
			for (a = 0; a < 4096; a += 64)
				cm_access(&c, colored_page(p, 0, 16, 32) + a, &rng);
		hits = 0;
		for (p = 0; p < vpages; p++)
			for (a = 0; a < 4096; a += 64)
				hits += cm_probe(&c, colored_page(p, col_v0, ncol_v, 32) + a);
		hs = hits / (double)(vpages * 64);
		ok(hd == 1.0, "resident %g (%g)", "disjoint colours: victim fully resident after a 32 MiB stream", hd, 0);
		ok(hs == 0.0, "resident %g (%g)", "shared colours: 32 MiB stream evicts the victim", hs, 0);
	}

	/* 13: capacity of a colour subset: 4 colours hold 4/32 of the cache */
	{
		double h3 = 0, h5 = 0;
		uint64_t p, a, rr = 7, n = 0, hh = 0;
		for (int k = 0; k < 2; k++) {
			uint64_t pages = k ? 80 : 48;	/* 4 colours = 256 KiB = 64 pages */
			cm_flush(&c);
			n = hh = 0;
			for (int pass = 0; pass < 3; pass++)
				for (p = 0; p < pages; p++)
					for (a = 0; a < 4096; a += 64) {
						int h = cm_access(&c, colored_page(p, 0, 4, 32) + a, &rr);
						if (pass) { hh += h; n++; }
					}
			if (k) h5 = hh / (double)n; else h3 = hh / (double)n;
		}
		ok(h3 == 1.0 && h5 == 0.0, "0.75x of 4 colours %g, 1.25x %g",
		   "4 colours = 256 KiB: 192 KiB cyclic fits, 320 KiB thrashes", h3, h5);
	}
	cm_free(&c);

	/* 14-16: size parsing */
	ok(cm_parse_size("2M") == (2u << 20) && cm_parse_size("256K") == (256u << 10) &&
	   cm_parse_size("64") == 64 && cm_parse_size("1MiB") == (1u << 20),
	   NULL, "size parsing: 2M 256K 64 1MiB", 0, 0);
	ok(cm_parse_size("2X") == 0 && cm_parse_size("") == 0, NULL, "size parsing: bad strings give 0", 0, 0);
	/* random replacement never returns hit for an absent line */
	ok(hit_iff_present(CM_RANDOM) == 0, NULL, "random replacement: hit iff present, line present after access", 0, 0);

	/* 17-18: a way mask of k of 16 ways: the capacity knee at k/16 of the LLC */
	cm_init(&c, 2 << 20, 16, 64, CM_LRU);
	{
		uint64_t four = 0xf, way_bytes = (2 << 20) / 16;
		double in = cyclic_hit_rate_ways(&c, 1 << 30, 3 * way_bytes, 2, four);
		double out = cyclic_hit_rate_ways(&c, 1 << 30, 5 * way_bytes, 2, four);
		double all = cyclic_hit_rate_ways(&c, 1 << 30, 5 * way_bytes, 2, CM_ALL_WAYS);
		ok(in == 1.0 && out == 0.0, "0.75x of 4 ways %g, 1.25x %g",
		   "way mask of 4 of 16 ways: 384 KiB cyclic fits, 640 KiB thrashes", in, out);
		ok(all == 1.0, "hit rate %g (%g)", "the same 640 KiB with all ways fits", all, 0);
	}

	/* 19: disjoint masks isolate (CAT), the same mask does not */
	{
		uint64_t a, hits2 = 0, lines = (512 << 10) / 64;
		double iso = 0, shared = 0;

		for (int k = 0; k < 2; k++) {
			uint64_t stream_ways = k ? 0x00ff : 0xff00;

			cm_flush(&c);
			for (a = 0; a < (512 << 10); a += 64)
				cm_access_ways(&c, (1ull << 30) + a, &rng, 0x00ff);
			for (a = 0; a < (32 << 20); a += 64)
				cm_access_ways(&c, (2ull << 30) + a, &rng, stream_ways);
			hits2 = 0;
			for (a = 0; a < (512 << 10); a += 64)
				hits2 += cm_probe(&c, (1ull << 30) + a);
			if (k)
				shared = hits2 / (double)lines;
			else
				iso = hits2 / (double)lines;
		}
		ok(iso == 1.0 && shared == 0.0, "resident %g disjoint, %g shared",
		   "ways 0-7 against a 32 MiB stream in ways 8-15: victim resident; in ways 0-7: evicted", iso, shared);
	}

	/* 20: a line filled under one mask hits for any mask (lookups see every way) */
	cm_flush(&c);
	cm_access_ways(&c, 4096, &rng, 0x1);
	ok(cm_access_ways(&c, 4096, &rng, 0x8000) == 1 && cm_access(&c, 4096, &rng) == 1, NULL,
	   "a line filled in way 0 hits for an accessor limited to way 15", 0, 0);
	cm_free(&c);

	/* 21: random masks against the reference, small cache */
	{
		struct ref r;
		int mism = 0;
		uint64_t masks[4] = {0xff, 0x0f, 0xf0, 0x81};

		cm_init(&c, 64 << 10, 8, 64, CM_LRU);
		ref_init(&r, 64 << 10, 8, 64);
		for (i = 0; i < 400000; i++) {
			uint64_t a = (cm_xorshift(&rng) % (256 << 10)) & ~63ull;
			uint64_t m = masks[cm_xorshift(&rng) % 4];

			mism += cm_access_ways(&c, a, &rng, m) != ref_access_ways(&r, a, m);
		}
		ok(mism == 0, "%g mismatches (%g)", "LRU with random way masks agrees with the reference", mism, 0);
		cm_free(&c);
	}

	/*
	 * 22-31: the stride prefetcher (prefetch.h) and the miss-overlap
	 * timing (timing.h) on a test core (core.h) running the guest's mlp
	 * loops over 16 MiB (8x the LLC) on scattered 4 KiB frames.
	 */
	{
		struct core k;
		uint64_t lines = 16 << 14, pages = (16 << 8) + 4096 + 512;
		double cov, t;

		/* 22: a stream is covered: after 3 misses every L1 miss hits a
		 * prefetched L2 line, across pages (the frames are known) */
		core_init(&k, pages, 8, 16, 0, 1, 1.0);
		loop_stream(&k, lines, 200000, 1);
		cov = 1 - (double)k.mem / (double)k.l1m;
		ok(cov > 0.999 && k.pf_fill > 190000, "%.4f of L1 misses from the L2, %g lines prefetched",
		   "prefetcher: a sequential stream is covered, across 4 KiB pages", cov, (double)k.pf_fill);
		core_free(&k);

		/* 23: without translations it stops at each page: one miss in 64 */
		core_init(&k, pages, 8, 0, 0, 1, 1.0);
		loop_stream(&k, lines, 200000, 1);
		t = (double)k.mem / (double)k.l1m;
		ok(t > 0.9 / 64 && t < 1.1 / 64, "%.4f of L1 misses to memory, 1/64 = %.4f",
		   "prefetcher with pf_xlat=0: a stream misses once per 4 KiB page", t, 1.0 / 64);
		core_free(&k);

		/* 24: strides of 2 lines, and downwards */
		core_init(&k, pages, 8, 16, 0, 1, 1.0);
		loop_stream(&k, lines, 100000, 2);
		cov = 1 - (double)k.mem / (double)k.l1m;
		core_free(&k);
		core_init(&k, pages, 8, 16, 0, 1, 1.0);
		loop_stream(&k, lines, 100000, -1);
		t = 1 - (double)k.mem / (double)k.l1m;
		ok(cov > 0.999 && t > 0.999, "stride 2: %.4f, stride -1: %.4f covered",
		   "prefetcher: a stride of 128 B and a descending stream are covered", cov, t);
		core_free(&k);

		/* 25: off (pf=0): the stream misses every line */
		core_init(&k, pages, 0, 16, 0, 1, 1.0);
		loop_stream(&k, lines, 100000, 1);
		ok(k.mem == k.l1m && k.pf_fill == 0, "%g of %g L1 misses to memory",
		   "prefetcher off: nothing prefetched", (double)k.mem, (double)k.l1m);
		core_free(&k);

		/* 26: random loads are not covered (nothing prefetched) */
		core_init(&k, pages, 8, 16, 0, 1, 1.0);
		loop_rand(&k, lines, 200000);
		t = (double)k.pf_fill / (double)k.l1m;
		ok(t < 0.001, "%.5f lines prefetched per L1 miss (%g)", "prefetcher: random loads are not covered", t, 0);
		core_free(&k);

		/* 27: nor is a pointer chase */
		core_init(&k, pages, 8, 16, 0, 1, 1.0);
		loop_chase(&k, lines, 200000);
		t = (double)k.pf_fill / (double)k.l1m;
		ok(t < 0.001 && k.mem > 0.95 * k.l1m, "%.5f lines prefetched per L1 miss, %.3f to memory",
		   "prefetcher: a random pointer chase is not covered", t, (double)k.mem / (double)k.l1m);
		core_free(&k);

		/* 28: the overlap model: each chase load waits for the one before */
		core_init(&k, pages, 8, 16, 320, 24, 0.4);
		t = loop_chase(&k, lines, 100000);
		ok(t > 0.97 * 200 && t < 200 + 4 * 0.4 + 1, "%.1f cycles per load, lat_mem + 4 x 0.4 = %.1f",
		   "timing: a pointer chase pays the full memory latency per load", t, 200 + 1.6);
		core_free(&k);

		/* 29: independent random misses: lat_mem x miss rate / mshr (Little) */
		core_init(&k, pages, 8, 16, 320, 13, 0.4);
		t = loop_rand(&k, lines, 100000);
		{
			double occ = ((double)k.mem * 200 + (double)k.llch * 40 + (double)k.l2h * 12) / 100000 / 13;

			ok(t > 0.95 * occ && t < 1.05 * occ, "%.2f cycles per load, occupancy / mshr = %.2f",
			   "timing: random misses overlap mshr at a time", t, occ);
		}
		core_free(&k);

		/* 30: a prefetched stream costs its instructions */
		core_init(&k, pages, 8, 16, 320, 13, 0.4);
		t = loop_stream(&k, lines, 100000, 1);
		ok(t > 7 * 0.4 - 0.01 && t < 7 * 0.4 * 1.05, "%.3f cycles per line, 7 x 0.4 = %.2f",
		   "timing: a prefetched stream costs its instructions (L2 hits overlap)", t, 2.8);
		core_free(&k);

		/* 31: additive timing (rob=0): a random load costs its level */
		core_init(&k, pages, 0, 0, 0, 1, 1.0);
		t = loop_rand(&k, lines, 100000);
		{
			double add = 11 + ((double)k.mem * 200 + (double)k.llch * 40 + (double)k.l2h * 12) / 100000;

			ok(t > add - 0.01 && t < add + 0.01, "%.2f cycles per load, expected %.2f",
			   "timing: additive (rob=0) charges every miss its full latency", t, add);
		}
		core_free(&k);

	}

	/*
	 * 32-37: memory-bandwidth contention (bandwidth.h): a miss to memory
	 * costs lat / (1 - min(u, umax)), u the lines of the last 16 slots of
	 * modeled time over what the peak moves in them.
	 */
	{
		struct bw_model m;
		uint64_t t, lat;

		/* 32: off (peak 0): the latency as given, whatever the traffic */
		bw_init(&m, 0, 0.9, 1000);
		for (t = 0; t < 2000000; t += 100)
			bw_add(&m, t);
		lat = bw_latency(&m, 2000000, 20000);
		ok(lat == 20000, "%g centicycles, want %g", "bandwidth off: a miss costs lat_mem", (double)lat, 20000);

		/* 33: 5 lines per 1000 cycles at a peak of 10: u = 0.5, twice the latency */
		bw_init(&m, 10, 0.9, 1000);
		lat = bw_latency(&m, 0, 20000);
		for (t = 0; t < 2000000; t += 20000)	/* one line per 200 cycles */
			bw_add(&m, t);
		{
			uint64_t l2 = bw_latency(&m, 2000000 - 1, 20000);

			ok(lat == 20000 && l2 > 0.99 * 40000 && l2 < 1.01 * 40000, "idle %g, at u = 0.5 %g",
			   "bandwidth: no traffic, lat_mem; half the peak, twice it", (double)lat, (double)l2);
		}

		/* 34: far above the peak: capped at 1 / (1 - umax) */
		bw_init(&m, 10, 0.9, 1000);
		for (t = 0; t < 2000000; t += 500)	/* 200 lines per 1000 cycles */
			bw_add(&m, t);
		lat = bw_latency(&m, 2000000 - 1, 20000);
		ok(lat == 200000, "%g centicycles, want %g", "bandwidth: u capped at umax (10x at 0.9)", (double)lat, 200000);

		/* 35: traffic older than the window does not count */
		lat = bw_latency(&m, 2000000 + 16 * 100000 + 100000, 20000);
		ok(lat == 20000, "%g centicycles, want %g", "bandwidth: the window forgets old traffic", (double)lat, 20000);

		/* 36: lines a vCPU ahead in modeled time added count for one behind */
		bw_init(&m, 10, 0.9, 1000);
		for (t = 500000; t < 1300000; t += 20000)	/* 40 lines, 0-8000 cycles ahead */
			bw_add(&m, t);
		lat = bw_latency(&m, 500000, 20000);
		ok(lat > 0.99 * 20000 / 0.75 && lat < 1.01 * 20000 / 0.75, "%g centicycles, want %g",
		   "bandwidth: traffic of a vCPU ahead counts (u = 40 / 160)", (double)lat, 20000 / 0.75);
	}
	{
		/*
		 * 52 (numbered last): a stream one sync quantum (10,000 cycles)
		 * behind the vCPU that asks, 0.4 lines a cycle: with slots of
		 * 1,000 cycles the window holds 5 of its 16 slots of it (the
		 * asker's own slot is still to come), with slots of the
		 * quantum 14 of 16
		 */
		struct bw_model m;
		uint64_t t, now = 100000000;	/* centicycles: 1,000,000 cycles */
		double u[2];

		for (int k = 0; k < 2; k++) {
			bw_init(&m, 1000, 0.99, k ? 10000 : 1000);
			for (t = 0; t < now - 1000000; t += 250)	/* a line every 2.5 cycles */
				bw_add(&m, t);
			u[k] = bw_util(&m, now) / 0.4;
		}
		bw_u_lag[0] = u[0];
		bw_u_lag[1] = u[1];
	}
	{
		/* 37: two cores sharing the memory: a pointer chase beside a
		 * prefetched stream pays lat_mem / (1 - u), u their lines per
		 * cycle over the peak; alone it pays lat_mem */
		struct bw_model m;
		struct core a, b;
		uint64_t lines = 16 << 14, pages = (16 << 8) + 4096 + 512, *next, *perm, i, cur = 0, sl = 0;
		uint64_t a0, b0, lines0, mem0, loads = 0;
		double alone, beside, u, peak = 600;

		core_init(&a, pages, 16, 16, 160, 14, 0.4);
		core_init(&b, pages, 16, 16, 160, 14, 0.4);
		next = malloc(lines * sizeof(*next));
		perm = malloc(lines * sizeof(*perm));
		for (i = 0; i < lines; i++)
			perm[i] = i;
		for (i = lines - 1; i > 0; i--) {
			uint64_t j = cm_xorshift(&a.rng) % (i + 1), x = perm[i];

			perm[i] = perm[j];
			perm[j] = x;
		}
		for (i = 0; i < lines; i++)
			next[perm[i]] = perm[(i + 1) % lines];
		free(perm);
		bw_init(&m, peak, 0.9, 1000);
		core_set_bw(&a, &m);
		core_set_bw(&b, &m);
		loop_touch(&a, lines * 64);
		a0 = a.clock;
		for (i = 0; i < 50000; i++) {	/* alone: b idle */
			core_insns(&a, 4);
			core_load(&a, LOOP_BASE + cur * 64, LOOP_BASE + next[cur] * 64);
			cur = next[cur];
		}
		alone = (double)(a.clock - a0) / 100 / 50000;
		b.clock = a.clock;
		a0 = a.clock;
		b0 = b.clock;
		lines0 = b.mem + b.pf_mem + a.mem + a.pf_mem;
		mem0 = a.mem;
		while (loads < 50000) {		/* the lower clock steps */
			if (a.clock <= b.clock) {
				core_insns(&a, 4);
				core_load(&a, LOOP_BASE + cur * 64, LOOP_BASE + next[cur] * 64);
				cur = next[cur];
				loads++;
			} else {
				core_insns(&b, 7);
				core_load(&b, LOOP_BASE + (64 << 20) + (sl++ % lines) * 64, 0);
			}
		}
		beside = (double)(a.clock - a0) / 100 / 50000;
		u = (double)(b.mem + b.pf_mem + a.mem + a.pf_mem - lines0) /
		    ((double)(a.clock - a0 + b.clock - b0) / 2 / 100) / (peak / 1000);
		ok(alone > 0.97 * 200 && alone < 203 && a.mem - mem0 > 0.95 * 50000 &&
		   beside > 0.9 * 200 / (1 - u) && beside < 1.1 * 200 / (1 - u),
		   "%.1f cycles per load beside the stream, 200 / (1 - u) = %.1f",
		   "bandwidth: a chase beside a stream on another core pays lat_mem / (1 - u)", beside, 200 / (1 - u));
		printf("# 37: alone %.1f cycles per load, u = %.3f beside the stream\n", alone, u);
		free(next);
		core_free(&a);
		core_free(&b);
	}

	/*
	 * 38-44: the data TLBs (tlb.h) on the access path (access.h): LRU
	 * levels, the page size seen in the addresses, walks whose leaf load
	 * goes through the caches and whose time joins the access's.
	 */
	{
		struct tlb_level l;
		struct ref r;
		uint64_t x = 7, i, bad = 0, hits = 0;
		int k;

		/* 38: a TLB level is LRU per set: against the reference, fully
		 * associative (18) and 64 sets x 12 ways */
		for (k = 0; k < 2; k++) {
			uint32_t entries = k ? 768 : 18, ways = k ? 12 : 0, range = k ? 2000 : 30;

			tlb_level_init(&l, entries, ways);
			ref_init(&r, entries, ways ? ways : entries, 1);
			for (i = 0; i < 200000; i++) {
				uint64_t vpn = cm_xorshift(&x) % range;
				int a = tlb_level_access(&l, vpn, (vpn << 1) + 1), b = ref_access(&r, vpn);

				bad += a != b;
				hits += a;
			}
			free(l.key);
			free(r.tag);
			free(r.ts);
		}
		ok(bad == 0 && hits > 50000, "%g disagreements, %g hits", "tlb: a level is LRU per set (18 full, 64 x 12)",
		   (double)bad, (double)hits);
	}
	{
		struct core k;
		uint64_t i, n = 0, lines = 32 << 14, pages = (32 << 8) + 512;	/* 32 MiB */
		double t, want, add;

		/* 39: the page size from the addresses: 2 MiB frames are seen as
		 * huge, scattered 4 KiB frames (almost) never */
		core_init(&k, pages, 0, 16, 0, 1, 1.0);
		for (i = 0; i < pages; i++)
			n += tlb_huge(LOOP_BASE + i * 4096, core_pa(&k, LOOP_BASE + i * 4096));
		core_set_huge(&k);
		t = 0;
		for (i = 0; i < pages; i++)
			t += tlb_huge(LOOP_BASE + i * 4096 + 64, core_pa(&k, LOOP_BASE + i * 4096 + 64));
		ok(n < pages / 100 && t == pages, "%g of 4 KiB pages taken for huge, %g of the 2 MiB mapping's",
		   "tlb: 2 MiB pages told from 4 KiB ones by their addresses", (double)n, t);
		core_free(&k);

		/* 40: a chase on 4 KiB pages beyond the STLB's reach pays a walk
		 * per load on top of the miss: lat_stlb + lat_walk + its leaf */
		core_init(&k, pages, 16, 16, 160, 14, 0.4);
		core_set_tlb(&k, 18, 0, 768, 12, 7, 30);
		t = loop_chase(&k, lines, 100000);
		add = latencies(&k) / 100000 + 4 * 0.4;
		ok(k.walks > 0.9 * 100000 && t > 0.99 * add && t < 1.01 * add && t > 200 + 0.9 * (37 + 12),
		   "%.1f cycles per load, the latencies add up to %.1f",
		   "tlb: a 4 KiB chase beyond the STLB walks (9 loads in 10), the walk's time added", t, add);
		printf("# 40: %.3f walks per load, leaf in L2 %.3f, LLC %.3f, memory %.3f\n",
		       (double)k.walks / 100000, (double)k.walk_l2 / (double)k.walks,
		       (double)k.walk_llc / (double)k.walks, (double)k.walk_mem / (double)k.walks);
		core_free(&k);

		/* 41: the same chase on 2 MiB pages: 16 pages, no walk, no STLB
		 * lookup: the time of the core without TLBs */
		core_init(&k, pages, 16, 16, 160, 14, 0.4);
		core_set_huge(&k);
		want = loop_chase(&k, lines, 100000);
		core_free(&k);
		core_init(&k, pages, 16, 16, 160, 14, 0.4);
		core_set_huge(&k);
		core_set_tlb(&k, 18, 0, 768, 12, 7, 30);
		t = loop_chase(&k, lines, 100000);
		ok(k.walks == 0 && k.stlb == 0 && t > 0.999 * want && t < 1.001 * want,
		   "%.2f cycles per load, without TLBs %.2f", "tlb: a chase on 16 huge pages neither walks nor misses the L1 DTLB",
		   t, want);
		core_free(&k);

		/* 42: the walks' leaf lines live in the caches: 8 MiB on 4 KiB
		 * pages (2048 pages, 256 lines of PTEs) walks on most loads, and
		 * the walks find their PTEs in the L2 */
		core_init(&k, pages, 16, 16, 160, 14, 0.4);
		core_set_tlb(&k, 18, 0, 768, 12, 7, 30);
		loop_chase(&k, 8 << 14, 100000);
		ok(k.walks > 0.5 * 100000 && k.walk_l2 > 0.95 * k.walks && cm_probe(&k.l2, tlb_leaf(LOOP_BASE, 0)),
		   "%.3f walks per load, %.3f of their PTEs from the L2",
		   "tlb: page-table loads go through the caches (PTE lines stay in the L2)",
		   (double)k.walks / 100000, (double)k.walk_l2 / (double)k.walks);
		core_free(&k);

		/* 43: random loads on 4 KiB pages: walk and load overlap as one
		 * outstanding miss: its occupancy (walk included) over mshr */
		core_init(&k, pages, 16, 16, 320, 14, 0.4);
		core_set_tlb(&k, 18, 0, 768, 12, 7, 30);
		t = loop_rand(&k, lines, 100000);
		want = latencies(&k) / 100000 / 14;
		ok(k.walks > 0.9 * 100000 && t > 0.95 * want && t < 1.05 * want,
		   "%.2f cycles per load, occupancy / mshr = %.2f", "tlb: random loads' walks overlap with the misses", t, want);
		core_free(&k);

		/* 44: an L1 hit whose translation misses the L1 DTLB is charged
		 * it: 64 pages, a line each (in the L1), round robin past 18
		 * entries: every access an STLB hit, 7 cycles (additive timing) */
		core_init(&k, pages, 0, 16, 0, 1, 1.0);
		core_set_tlb(&k, 18, 0, 768, 12, 7, 30);
		for (i = 0; i < 64; i++)	/* line i of page i: L1 set i */
			core_load(&k, LOOP_BASE + i * 4096 + i * 64, 0);
		{
			uint64_t c0 = k.clock, s0 = k.stlb, l0 = k.l1m;

			for (i = 0; i < 64000; i++) {
				core_insns(&k, 2);
				core_load(&k, LOOP_BASE + (i % 64) * 4096 + (i % 64) * 64, 0);
			}
			t = (double)(k.clock - c0) / 100 / 64000;
			ok(k.stlb - s0 == 64000 && k.l1m == l0 && t > 9 - 1e-9 && t < 9 + 1e-9,
			   "%.3f cycles per access, want 2 x 1 + 7 = %g",
			   "tlb: an L1 hit pays its STLB lookup", t, 9);
		}
		core_free(&k);
	}

	/*
	 * 45-47: the reorder buffer holds `rob` instructions past a miss, so a
	 * core hides at most rob x CPI cycles of it however many miss-free
	 * instructions follow (ROB 224, CPI 0.4: 89.6 of lat_mem's 200).
	 */
	{
		struct core k;
		uint64_t lines = 64 << 14, pages = (64 << 8) + 4096 + 512, x = 1, t0;
		double t, want;
		long u, n = 20000;

		/* 45: independent random loads 5000 instructions apart: each
		 * miss costs lat - rob x CPI past the instructions (not 0) */
		core_init(&k, pages, 0, 0, 224, 14, 0.4);
		t0 = k.clock;
		for (u = 0; u < n; u++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			core_insns(&k, 5000);
			core_load(&k, LOOP_BASE + ((x >> 32) * lines >> 32) * 64, 0);
		}
		core_insns(&k, 5000);	/* the last one's window fills */
		t = per_unit(&k, t0, n) - 5000 * 0.4 * (n + 1) / n;
		want = ((double)k.mem * (200 - 224 * 0.4) + (double)k.llch * (40 > 224 * 0.4 ? 40 - 224 * 0.4 : 0)) / n;
		ok(t > 0.999 * want && t < 1.001 * want && k.mem > 0.9 * n,
		   "%.2f cycles per load beyond its instructions, %.2f expected",
		   "timing: a miss followed by >> rob / CPI instructions stalls lat - rob x CPI", t, want);
		core_free(&k);

		/* 46: two dependent misses 100 instructions apart, then 5000:
		 * the first stalls from its window's end (clock 4000 + 124 x 40)
		 * to 20000, the second (issued at 20000, its window full 100
		 * instructions later) from 20000 + 100 x 40 to 40000 (centicycles) */
		core_init(&k, pages, 0, 0, 224, 14, 0.4);
		core_load(&k, LOOP_BASE, LOOP_BASE + 4096 * 7);
		core_insns(&k, 100);
		core_load(&k, LOOP_BASE + 4096 * 7, 0);
		core_insns(&k, 5000);
		want = 5100 * 40 + (20000 - (4000 + 124 * 40)) + (40000 - (20000 + 100 * 40));
		ok(k.mem == 2 && (double)k.clock == want, "clock %g centicycles, want %g",
		   "timing: two dependent misses 100 instructions apart stall in turn, each its own share", (double)k.clock, want);
		core_free(&k);

		/* 47: a pointer chase 5000 instructions a load: every load
		 * stalls lat - rob x CPI (the one before it has completed) */
		core_init(&k, pages, 0, 0, 224, 14, 0.4);
		t0 = k.clock;
		for (u = 0; u < n; u++) {
			core_insns(&k, 5000);
			core_load(&k, LOOP_BASE + (uint64_t)u * 4096 * 3, LOOP_BASE + (uint64_t)(u + 1) * 4096 * 3);
		}
		core_insns(&k, 5000);
		t = per_unit(&k, t0, n) - 5000 * 0.4 * (n + 1) / n;
		want = (double)k.mem * (200 - 224 * 0.4) / n;
		ok(k.mem == (uint64_t)n && t > want - 1e-6 && t < want + 1e-6, "%.2f cycles per load beyond its instructions, %.2f expected",
		   "timing: dependent misses 5000 instructions apart (a chase) each stall lat - rob x CPI", t, want);
		core_free(&k);
	}

	/* 48-51: SRRIP */
	{
		struct cm_cache lru, rrip;
		uint64_t a, s, base = 1ull << 30, sbase = 2ull << 30;
		double keep[2][2];
		int bad = 0;

		ok(hit_iff_present(CM_SRRIP) == 0, NULL, "SRRIP: hit iff present, line present after access", 0, 0);

		/*
		 * A resident 512 KiB (a quarter of a 2 MiB 16-way LLC), filled
		 * and hit once (SRRIP protects a line only after a hit), then
		 * visited 4 times with a stream between visits: of 1x the LLC
		 * (16 lines a set) SRRIP keeps it and LRU does not; of 4x the
		 * LLC SRRIP loses it too (scan resistance, not a bigger cache).
		 */
		cm_init(&lru, 2 << 20, 16, 64, CM_LRU);
		cm_init(&rrip, 2 << 20, 16, 64, CM_SRRIP);
		for (int k = 0; k < 2; k++) {
			uint64_t sbytes = (uint64_t)(k ? 8 : 2) << 20;

			for (int m = 0; m < 2; m++) {
				struct cm_cache *cc = m ? &rrip : &lru;
				uint64_t h = 0, n = 0;

				cm_flush(cc);
				for (a = 0; a < (512 << 10); a += 64)
					cm_access(cc, base + a, &rng);
				for (int v = 0; v < 5; v++) {
					for (a = 0; a < (512 << 10); a += 64, n += v > 0)
						h += (uint64_t)cm_access(cc, base + a, &rng) * (v > 0);
					for (s = 0; s < sbytes; s += 64)
						cm_access(cc, sbase + (uint64_t)v * sbytes + s, &rng);
				}
				keep[k][m] = (double)h / (double)n;
			}
		}
		ok(keep[0][1] == 1.0 && keep[0][0] == 0.0, "SRRIP %g, LRU %g",
		   "a quarter of the LLC visited between streams of 1x the LLC: SRRIP keeps it, LRU does not",
		   keep[0][1], keep[0][0]);
		ok(keep[1][1] == 0.0 && keep[1][0] == 0.0, "SRRIP %g, LRU %g",
		   "the same between streams of 4x the LLC: both lose it", keep[1][1], keep[1][0]);

		/* a way mask: the fills stay in the mask's ways, its victim too */
		cm_flush(&rrip);
		for (a = 0; a < (4 << 20); a += 64)
			cm_access_ways(&rrip, sbase + a, &rng, 0x00ff);
		bad = 0;
		for (i = 0; i < (int)(rrip.sets * rrip.ways); i++)
			bad += (cm_tag_of(rrip.tags[i]) != 0) != (cm_way_of(rrip.tags[i]) < 8) ||
			       cm_way_of(rrip.tags[i]) != (uint32_t)(i % rrip.ways);
		ok(bad == 0, "%g entries outside ways 0-7 or off their slot (%g)",
		   "SRRIP with a way mask of 8 of 16: a 4 MiB stream fills ways 0-7 only", bad, 0);
		cm_free(&lru);
		cm_free(&rrip);
	}

	ok(fabs(bw_u_lag[0] - 5 / 16.0) < 1e-3 && fabs(bw_u_lag[1] - 14 / 16.0) < 1e-3,
	   "1,000-cycle slots %.3f, quantum slots %.3f", "bandwidth: a stream a sync quantum behind: u of the rate seen",
	   bw_u_lag[0], bw_u_lag[1]);

	/* 53-55: prefetch fills paced (pf_fill=; access.h) */
	{
		struct core k;
		uint64_t lines = 16 << 14, pages = (16 << 8) + 4096 + 512;
		double t;

		/* 53: prefetch fills paced at one line every 10 cycles: the
		 * stream of test 30 (2.8 cycles a line by its instructions) runs
		 * at the fill rate, waiting on lines not yet arrived */
		core_init(&k, pages, 8, 16, 320, 13, 0.4);
		k.path.c_fill = 1000;
		t = loop_stream(&k, lines, 100000, 1);
		ok(t > 0.98 * 10 && t < 1.02 * 10 && k.pfw > 0.9 * 100000,
		   "%.3f cycles per line (fill every 10), %g loads waited", "timing: a paced prefetcher holds a stream to its fill rate",
		   t, (double)k.pfw);
		core_free(&k);

		/* 54: a fill rate above the instructions' pace changes nothing */
		core_init(&k, pages, 8, 16, 320, 13, 0.4);
		k.path.c_fill = 200;
		t = loop_stream(&k, lines, 100000, 1);
		ok(t > 7 * 0.4 - 0.01 && t < 7 * 0.4 * 1.05, "%.3f cycles per line, 7 x 0.4 = %.2f",
		   "timing: a fill rate faster than the stream does not slow it", t, 2.8);
		core_free(&k);

		/* 55: nor does it touch what the prefetcher does not cover */
		{
			double r[2], ch[2];
			int f;

			for (f = 0; f < 2; f++) {
				core_init(&k, pages, 8, 16, 320, 13, 0.4);
				k.path.c_fill = f ? 1000 : 0;
				r[f] = loop_rand(&k, lines, 50000);
				ch[f] = loop_chase(&k, lines, 20000);
				core_free(&k);
			}
			/* (the prefetcher trains on a chance stride now and then) */
			ok(fabs(r[1] / r[0] - 1) < 1e-3 && fabs(ch[1] / ch[0] - 1) < 1e-3,
			   "random loads %.3f, chase %.3f cycles a load paced, within 0.1%% of not",
			   "timing: paced fills leave random loads and a chase as they were", r[1], ch[1]);
		}
	}

	/* 56-58: PACMan (SRRIP, prefetch fills at distant) */
	{
		struct cm_cache pm;
		double keep[2], kept[3];
		static const uint32_t near[3] = { 0, 512, 1024 };

		cm_init(&pm, 2 << 20, 16, 64, CM_PACMAN);
		/*
		 * Test 49's resident quarter between streams of 4x the LLC (64
		 * lines a set, which SRRIP loses it to): prefetch fills take
		 * about a way a set and the quarter stays; the same stream of
		 * demand fills takes it as under SRRIP.
		 */
		for (int pf = 0; pf < 2; pf++)
			keep[pf] = quarter_kept(&pm, &rng, pf);
		ok(hit_iff_present(CM_PACMAN) == 0, NULL, "PACMan: hit iff present, line present after access", 0, 0);
		ok(keep[1] == 1.0 && keep[0] == 0.0, "prefetched %g, demand %g",
		   "PACMan keeps a quarter of the LLC between prefetched streams of 4x the LLC, not demand ones",
		   keep[1], keep[0]);
		/*
		 * Bimodal insertion (pf_near of 1024 prefetch fills as SRRIP's):
		 * all of them near is SRRIP, which loses the quarter; none is
		 * PACMan-M, which keeps it; half of them keeps part.
		 */
		for (int i = 0; i < 3; i++) {
			pm.pf_near = near[i];
			kept[i] = quarter_kept(&pm, &rng, 1);
		}
		ok(kept[0] == 1.0 && kept[2] == 0.0 && kept[1] > 0.0 && kept[1] < 1.0,
		   "kept %g with half near, %g with all (none near: all kept)",
		   "PACMan with pf_near: none near keeps the quarter, all near loses it, half keeps part",
		   kept[1], kept[2]);
		/*
		 * 59: decay, none near.  The streams between two visits of the
		 * quarter fill each set 64 times: ageing every 32 fills leaves a
		 * visited line at RRPV 2 and keeps it; every 16 ages it to the
		 * victim's 3 after 48 fills, where the last 16 fills of each
		 * visit take it at random beside the stream's distant lines:
		 * most of the quarter goes.
		 */
		pm.pf_near = 0;
		for (int i = 0; i < 2; i++)
			kept[i] = cm_set_decay(&pm, i ? 16 : 32) ? -1 : quarter_kept(&pm, &rng, 1);
		ok(kept[0] == 1.0 && kept[1] < 0.5 && cm_set_decay(&pm, 70000) == -1,
		   "kept %g ageing every 32 fills, %g every 16",
		   "PACMan with decay: a line is kept while its set takes under 3 x decay fills between its hits",
		   kept[0], kept[1]);
		cm_free(&pm);
	}

	printf("# %d/%d passed\n", ntest - nfail, ntest);
	return nfail ? 1 : 0;
}
