/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cachemodel.h - one set-associative cache level, used by the llcsim QEMU
 * plugin (private L1d/L2 per vCPU, one shared LLC) and by the host unit test.
 *
 * Model:
 *   - set index = (addr >> line_shift) & (sets - 1): physically indexed when
 *     fed physical addresses; no slice hashing.
 *   - a lookup that misses allocates the line (write-allocate; loads and
 *     stores are treated alike, dirty state and write-backs are not modelled).
 *   - replacement: true LRU (each set kept in MRU..LRU order), random
 *     (xorshift64, an invalid way first) or SRRIP (Jaleel et al., ISCA
 *     2010: a 2-bit re-reference prediction value per line, a fill at 2, a
 *     hit at 0, the victim the first way at 3, all ways aged until one is).
 *     SRRIP keeps lines that are hit beside a stream whose lines never are,
 *     which LRU and random replacement do not (scan resistance).  PACMan
 *     (Wu et al., MICRO 2011, its PACMan-M): SRRIP whose prefetch fills
 *     come in at 3, the first victims, so a prefetched stream that is not
 *     used again from this level takes about a way of each set
 *     (cm_access_pf()).  pf_near of each 1024 prefetch fills may come in
 *     at 2 instead (chosen at random; bimodal insertion, as BRRIP does for
 *     all fills), so a stream keeps some claim on the ways.  decay: every
 *     decay-th fill into a set ages its lines by one (cm_set_decay()), so a
 *     line not hit within 3 x decay fills of its set becomes a victim
 *     however few near fills came, chosen at random among the distant
 *     lines: what protects a reused line wears off with the time it waits,
 *     the time measured in the set's fills.
 *   - way partitioning, as Intel CAT / AMD L3 QoS do it: an access may hit
 *     in any way, but a miss fills only a way of the accessor's way mask
 *     (cm_access_ways()); the LRU line among those ways is the victim.
 *     Each entry remembers its physical way for that.
 *   - no locking here: the caller serialises accesses to one set (the plugin
 *     uses striped spinlocks for the shared LLC; private levels are only
 *     touched by their own vCPU thread).
 */
#ifndef LLCSIM_CACHEMODEL_H
#define LLCSIM_CACHEMODEL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum cm_repl { CM_LRU = 0, CM_RANDOM = 1, CM_SRRIP = 2, CM_PACMAN = 3 };

struct cm_cache {
	uint64_t size;		/* bytes */
	uint32_t ways;
	uint32_t line;		/* bytes, power of two */
	uint32_t sets;		/* power of two */
	uint32_t line_shift;
	uint32_t set_mask;
	enum cm_repl repl;
	uint32_t pf_near;	/* PACMan: prefetch fills at CM_RRPV_FILL, of 1024 */
	uint32_t decay;		/* SRRIP, PACMan: fills into a set per ageing, 0 = none */
	uint16_t *fills;	/* per set, fills since its last ageing (decay only) */
	/* sets * ways entries; entry = (line number + 1) | way << CM_WAY_SHIFT
	 * | RRPV << CM_RRPV_SHIFT, line number + 1 = 0: invalid.  For LRU,
	 * slot 0 of a set is the MRU line, slot ways-1 the LRU line, and the
	 * way is the physical way the line sits in; for random and SRRIP
	 * replacement slot w is way w (RRPV: SRRIP only). */
	uint64_t *tags;
};

#define CM_WAY_SHIFT 56
#define CM_RRPV_SHIFT 62
#define CM_TAG_MASK ((1ULL << CM_WAY_SHIFT) - 1)
#define CM_RRPV_MAX 3ULL		/* 2 bits: 3 = distant, the victim */
#define CM_RRPV_FILL 2ULL		/* SRRIP's "long" re-reference on a fill */
#define CM_MAX_WAYS 64
#define CM_ALL_WAYS (~0ULL)

static inline uint32_t cm_way_of(uint64_t entry) { return (uint32_t)(entry >> CM_WAY_SHIFT) & 63; }
static inline uint64_t cm_rrpv_of(uint64_t entry) { return entry >> CM_RRPV_SHIFT; }
static inline uint64_t cm_tag_of(uint64_t entry) { return entry & CM_TAG_MASK; }

static inline int cm_is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

/* Every line invalid; each slot of a set holds its own way. */
static inline void cm_flush(struct cm_cache *c)
{
	for (uint64_t i = 0; i < (uint64_t)c->sets * c->ways; i++)
		c->tags[i] = (uint64_t)(i % c->ways) << CM_WAY_SHIFT;
	if (c->fills)
		memset(c->fills, 0, c->sets * sizeof(*c->fills));
}

/* Returns 0, or -1 when the geometry is not usable (sizes not powers of two,
 * size not a multiple of ways*line, allocation failure). */
static inline int cm_init(struct cm_cache *c, uint64_t size, uint32_t ways,
			  uint32_t line, enum cm_repl repl)
{
	memset(c, 0, sizeof(*c));
	if (!ways || ways > CM_MAX_WAYS || !cm_is_pow2(line) || size % ((uint64_t)ways * line))
		return -1;
	uint64_t sets = size / ((uint64_t)ways * line);
	if (!cm_is_pow2(sets) || sets > (1u << 30))
		return -1;
	c->size = size;
	c->ways = ways;
	c->line = line;
	c->sets = (uint32_t)sets;
	c->line_shift = (uint32_t)__builtin_ctzll(line);
	c->set_mask = (uint32_t)sets - 1;
	c->repl = repl;
	c->tags = calloc(sets * ways, sizeof(uint64_t));
	if (!c->tags)
		return -1;
	cm_flush(c);
	return 0;
}

static inline void cm_free(struct cm_cache *c)
{
	free(c->tags);
	free(c->fills);
	c->tags = NULL;
	c->fills = NULL;
}

/* Age an SRRIP or PACMan set's lines every @decay fills (0: never); 0 or -1. */
static inline int cm_set_decay(struct cm_cache *c, uint32_t decay)
{
	if (decay > UINT16_MAX || (decay && c->repl != CM_SRRIP && c->repl != CM_PACMAN))
		return -1;
	if (decay && !c->fills && !(c->fills = calloc(c->sets, sizeof(*c->fills))))
		return -1;
	c->decay = decay;
	return 0;
}


static inline uint32_t cm_set_of(const struct cm_cache *c, uint64_t addr)
{
	return (uint32_t)(addr >> c->line_shift) & c->set_mask;
}

static inline uint64_t cm_xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/*
 * SRRIP on one set (slot w = way w): a hit sets the line's RRPV to 0; a miss
 * fills an invalid way of the mask, else the first way of the mask at
 * CM_RRPV_MAX (with @rng, one of them at random), ageing the mask's lines by
 * one until there is one, at @fill.  Lines outside the mask are not aged
 * (CAT: a partition's fills do not age another's lines).
 */
static inline int cm_access_srrip(uint64_t *set, uint32_t n, uint64_t tag, uint64_t ways, uint64_t fill,
				  uint64_t *rng)
{
	uint32_t w, k;

	for (w = 0; w < n; w++) {
		if (cm_tag_of(set[w]) == tag) {
			set[w] &= ~(CM_RRPV_MAX << CM_RRPV_SHIFT);
			return 1;
		}
	}
	for (w = 0; w < n; w++)
		if ((ways >> w & 1) && !cm_tag_of(set[w]))
			goto fill;
	for (;;) {
		for (k = 0, w = 0; w < n; w++)
			k += (ways >> w & 1) && cm_rrpv_of(set[w]) == CM_RRPV_MAX;
		k = k && rng ? (uint32_t)(cm_xorshift(rng) % k) : 0;
		for (w = 0; w < n; w++)
			if ((ways >> w & 1) && cm_rrpv_of(set[w]) == CM_RRPV_MAX && k-- == 0)
				goto fill;
		for (w = 0; w < n; w++)
			if (ways >> w & 1)
				set[w] += 1ULL << CM_RRPV_SHIFT;
	}
fill:
	set[w] = fill << CM_RRPV_SHIFT | (uint64_t)w << CM_WAY_SHIFT | tag;
	return 0;
}

/*
 * Access addr; a miss may fill only a way in `ways` (bit w = way w; bits
 * beyond the cache's ways are ignored, and a mask with none of its ways
 * means all of them).  pf: the access is a prefetch (PACMan fills it at
 * CM_RRPV_MAX; the other policies ignore it).  Returns 1 on a hit, 0 on a
 * miss (the line is then filled).  rng: state for random replacement (per
 * caller, non-zero), may be NULL for LRU.
 */
static inline int cm_access_pf(struct cm_cache *c, uint64_t addr, uint64_t *rng, uint64_t ways, int pf)
{
	uint64_t tag = (addr >> c->line_shift) + 1;
	uint64_t *set = c->tags + (size_t)cm_set_of(c, addr) * c->ways;
	uint32_t w, n = c->ways;
	uint64_t all = n < 64 ? (1ULL << n) - 1 : CM_ALL_WAYS;

	ways &= all;
	if (!ways)
		ways = all;
	if (c->repl == CM_LRU) {
		uint64_t e;

		for (w = 0; w < n; w++) {
			if (cm_tag_of(set[w]) == tag) {
				e = set[w];
				if (w)	/* move to MRU */
					memmove(set + 1, set, w * sizeof(uint64_t));
				set[0] = e;
				return 1;
			}
		}
		/*
		 * miss: the least recently used slot whose way the mask allows
		 * (invalid slots stay behind every valid one, so an invalid way
		 * of the mask is found first); its line goes, the new one takes
		 * its way at MRU
		 */
		for (w = n; w-- > 0;)
			if (ways >> cm_way_of(set[w]) & 1)
				break;
		e = (uint64_t)cm_way_of(set[w]) << CM_WAY_SHIFT | tag;
		if (w)
			memmove(set + 1, set, w * sizeof(uint64_t));
		set[0] = e;
		return 0;
	}
	if (c->repl == CM_SRRIP || c->repl == CM_PACMAN) {
		uint64_t fill = CM_RRPV_FILL;

		if (c->repl == CM_PACMAN && pf &&
		    !(c->pf_near && rng && cm_xorshift(rng) % 1024 < c->pf_near))
			fill = CM_RRPV_MAX;
		/*
		 * With decay the victim is any distant line: lines aged there
		 * compete with a stream's distant fills instead of one way
		 * taking every fill of the stream.
		 */
		if (cm_access_srrip(set, n, tag, ways, fill, c->decay ? rng : NULL))
			return 1;
		if (!c->decay)
			return 0;
		uint16_t *fills = c->fills + cm_set_of(c, addr);

		if (++*fills < c->decay)
			return 0;
		/* the mask's lines but the one just filled, as cm_access_srrip() ages */
		*fills = 0;
		for (w = 0; w < n; w++)
			if ((ways >> w & 1) && cm_rrpv_of(set[w]) < CM_RRPV_MAX && cm_tag_of(set[w]) != tag)
				set[w] += 1ULL << CM_RRPV_SHIFT;
		return 0;
	}
	for (w = 0; w < n; w++)
		if (cm_tag_of(set[w]) == tag)
			return 1;
	for (w = 0; w < n; w++) {
		if ((ways >> w & 1) && !cm_tag_of(set[w])) {
			set[w] = (uint64_t)w << CM_WAY_SHIFT | tag;
			return 0;
		}
	}
	/* a random way among the mask's: the k-th set bit, k uniform */
	{
		uint32_t k = (uint32_t)(cm_xorshift(rng) % (uint64_t)__builtin_popcountll(ways));

		for (w = 0; w < n; w++)
			if ((ways >> w & 1) && k-- == 0)
				break;
	}
	set[w] = (uint64_t)w << CM_WAY_SHIFT | tag;
	return 0;
}

static inline int cm_access_ways(struct cm_cache *c, uint64_t addr, uint64_t *rng, uint64_t ways)
{
	return cm_access_pf(c, addr, rng, ways, 0);
}

static inline int cm_access(struct cm_cache *c, uint64_t addr, uint64_t *rng)
{
	return cm_access_pf(c, addr, rng, CM_ALL_WAYS, 0);
}

/* Is the line of addr present (no state change)? */
static inline int cm_probe(const struct cm_cache *c, uint64_t addr)
{
	uint64_t tag = (addr >> c->line_shift) + 1;
	const uint64_t *set = c->tags + (size_t)cm_set_of(c, addr) * c->ways;
	for (uint32_t w = 0; w < c->ways; w++)
		if (cm_tag_of(set[w]) == tag)
			return 1;
	return 0;
}

/* Parse "2M", "256K", "64" (bytes); returns 0 on a bad string. */
static inline uint64_t cm_parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B' || *end == 'b')
		end++;
	if (*end == 'B')
		end++;
	return *end ? 0 : v;
}

#endif /* LLCSIM_CACHEMODEL_H */
