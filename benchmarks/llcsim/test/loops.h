/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loops.h - the access patterns of the guest's mlp loops (guest/llcsim.c:
 * chase, rand, stream, hash) on a host test core (core.h), with the
 * instruction counts the plugin measured per unit in the guest (chase 4,
 * rand 11, stream 7, a hash probe 10 + 7 per entry visited: 19.7 at 1.44
 * entries).  Each returns modeled cycles per unit.
 */
#ifndef LLCSIM_TEST_LOOPS_H
#define LLCSIM_TEST_LOOPS_H

#include "core.h"

#define LOOP_BASE 0x100000ULL	/* first virtual address of a loop's data */

static inline double per_unit(const struct core *c, uint64_t t0, long units)
{
	return (double)(c->clock - t0) / 100 / (double)units;
}

/* The core's caches as the guest's setup leaves them: `bytes` written;
 * then the counters start from 0. */
static inline void loop_touch(struct core *c, uint64_t bytes)
{
	for (uint64_t a = 0; a < bytes; a += 64)
		core_load(c, LOOP_BASE + a, 0);
	c->l1m = c->l2h = c->llch = c->mem = c->pf_fill = c->pfw = c->pfwait = 0;
	c->stlb = c->walks = c->walk_l2 = c->walk_llc = c->walk_mem = c->walk_huge = c->xlat_l1 = 0;
}

/* A random cyclic pointer chase over `lines` lines, `loads` loads. */
static inline double loop_chase(struct core *c, uint64_t lines, long loads)
{
	uint64_t *next = malloc(lines * sizeof(*next)), *perm = malloc(lines * sizeof(*perm));
	uint64_t i, cur, t0;
	long u;

	for (i = 0; i < lines; i++)
		perm[i] = i;
	for (i = lines - 1; i > 0; i--) {
		uint64_t j = cm_xorshift(&c->rng) % (i + 1), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (i = 0; i < lines; i++)
		next[perm[i]] = perm[(i + 1) % lines];
	free(perm);
	loop_touch(c, lines * 64);
	t0 = c->clock;
	for (cur = 0, u = 0; u < loads; u++) {
		core_insns(c, 4);
		core_load(c, LOOP_BASE + cur * 64, LOOP_BASE + next[cur] * 64);
		cur = next[cur];
	}
	free(next);
	return per_unit(c, t0, loads);
}

/* Independent random loads over `lines` lines (the guest's generator). */
static inline double loop_rand(struct core *c, uint64_t lines, long loads)
{
	uint64_t x = 1, t0;
	long u;

	loop_touch(c, lines * 64);
	t0 = c->clock;
	for (u = 0; u < loads; u++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		core_insns(c, 11);
		core_load(c, LOOP_BASE + ((x >> 32) * lines >> 32) * 64, 0);
	}
	return per_unit(c, t0, loads);
}

/* A sequential read, one load per line, `stride` lines apart (negative:
 * downwards from the end). */
static inline double loop_stream(struct core *c, uint64_t lines, long loads, int stride)
{
	uint64_t pos = stride > 0 ? 0 : lines - 1, t0;
	long u;

	loop_touch(c, lines * 64);
	t0 = c->clock;
	for (u = 0; u < loads; u++) {
		core_insns(c, 7);
		core_load(c, LOOP_BASE + pos * 64, pos * 8);
		pos = (pos + lines + (uint64_t)(int64_t)stride) % lines;
	}
	return per_unit(c, t0, loads);
}

/* Hash-join probes: `n` 32-byte entries chained from a power-of-two array
 * of 4-byte buckets, probe keys read in order from an 8 MiB array. */
static inline double loop_hash(struct core *c, uint64_t n, long probes)
{
	uint64_t nb = 1, i, t0, kb, eb, bb;
	uint32_t *bucket, *next, *key;
	long u;

	while (nb < n)
		nb <<= 1;
	bb = LOOP_BASE;
	eb = bb + ((nb * 4 + 4095) & ~4095ULL);
	kb = eb + ((n * 32 + 4095) & ~4095ULL);
	bucket = calloc(nb, 4);
	next = calloc(n, 4);
	key = malloc((8 << 20) / 8 * 4);
	for (i = 0; i < n; i++) {	/* entry i + 1's bucket: random */
		uint64_t b = cm_xorshift(&c->rng) & (nb - 1);

		next[i] = bucket[b];
		bucket[b] = (uint32_t)i + 1;
	}
	/* the bucket of each entry, to probe: kept in key[] as (bucket) */
	for (i = 0; i < (8 << 20) / 8; i++) {
		uint64_t b;

		do
			b = cm_xorshift(&c->rng) & (nb - 1);
		while (!bucket[b]);
		key[i] = (uint32_t)b;
	}
	loop_touch(c, kb + (8 << 20) - LOOP_BASE);
	t0 = c->clock;
	for (u = 0; u < probes; u++) {
		uint64_t kp = (uint64_t)u % ((8 << 20) / 8), b = key[kp];
		uint32_t e = bucket[b], want = e;	/* the chain's first entry */
		unsigned int walk = cm_xorshift(&c->rng) % 3 == 0;	/* 1.33-1.5 entries */

		core_insns(c, 10);
		core_load(c, kb + kp * 8, 0);
		core_load(c, bb + b * 4, eb + (uint64_t)(e - 1) * 32);
		if (walk && next[e - 1])
			want = next[e - 1];
		for (;;) {
			uint64_t ea = eb + (uint64_t)(e - 1) * 32;

			core_insns(c, 7);
			core_load(c, ea, 0);
			if (e == want) {
				core_load(c, ea + 8, 0);
				break;
			}
			core_load(c, ea + 16, next[e - 1] ? eb + (uint64_t)(next[e - 1] - 1) * 32 : 0);
			e = next[e - 1];
		}
	}
	free(bucket);
	free(next);
	free(key);
	return per_unit(c, t0, probes);
}

#endif /* LLCSIM_TEST_LOOPS_H */
