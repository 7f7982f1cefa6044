/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tlb.h - a core's data TLBs for the llcsim timing, used by the QEMU
 * plugin (dtlb=) and by the host unit test through plugin/access.h.
 * Times in centicycles.
 *
 * Two levels, as an AMD Zen 4 core has them (CPUID 0x80000005/6 on this
 * machine: L1 DTLB 72 entries, fully associative; L2 DTLB 3072 entries),
 * each set-associative LRU (ways = entries: fully associative), holding
 * 4 KiB and 2 MiB translations alike (an entry is a page number and its
 * size).  An access looks up the L1 DTLB, then the L2 (STLB), then walks
 * the page table; each level fills on a miss.
 *
 * Page size: the plugin sees a guest-physical address per access but not
 * the guest's page tables (QEMU 7.2's plugin API gives no registers, so no
 * CR3), so the size is inferred: an access whose virtual and physical
 * addresses agree in their low 21 bits is taken to be on a 2 MiB page (a
 * transparent huge page, the kernel's direct map), any other on a 4 KiB
 * page.  A 4 KiB page whose frame happens to agree (1 in 512 of randomly
 * placed frames) is taken for part of a 2 MiB one.
 *
 * The walk: the upper levels are taken to hit the page-walk cache (AMD's
 * PDE cache), so a walk costs `walk` centicycles of its own plus one
 * load of its leaf entry (the PTE of a 4 KiB page, the PMD entry of a
 * 2 MiB one), which the caller sends through the caches (tlb_leaf(): a
 * synthetic physical address derived from the virtual one, above any guest
 * RAM, 8 bytes an entry, so that a 64-byte line of PTEs covers 32 KiB of
 * virtual memory as on x86-64).  Page tables of different processes share
 * these addresses, and nothing flushes the TLBs (no context switch is seen).
 */
#ifndef LLCSIM_TLB_H
#define LLCSIM_TLB_H

#include <stdint.h>
#include <stdlib.h>

#define TLB_VA_MASK	((1ULL << 48) - 1)
#define TLB_PT_BASE	(1ULL << 50)	/* the PTEs, synthetic physical */
#define TLB_PMD_BASE	(3ULL << 49)	/* the PMD entries */
#define TLB_HUGE_MASK	((1ULL << 21) - 1)

enum tlb_result { TLB_HIT, TLB_STLB, TLB_WALK };

struct tlb_level {
	uint32_t sets, ways;
	uint64_t *key;			/* sets * ways, MRU first; 0: empty */
};

struct tlb {
	struct tlb_level l1, l2;
	uint64_t last;			/* the key of the last access (MRU of the L1) */
	uint64_t c_stlb;		/* an L1 DTLB miss that hits the L2 */
	uint64_t c_walk;		/* a walk's own cost, beyond its leaf load */
};

static inline int tlb_level_init(struct tlb_level *l, uint32_t entries, uint32_t ways)
{
	if (!ways)
		ways = entries;
	if (!entries || ways > entries || entries % ways)
		return -1;
	l->ways = ways;
	l->sets = entries / ways;
	if (l->sets & (l->sets - 1))
		return -1;
	l->key = calloc(entries, sizeof(*l->key));
	return l->key ? 0 : -1;
}

/* Looks up (and on a miss fills, LRU) the translation `key` of page `vpn`. */
static inline int tlb_level_access(struct tlb_level *l, uint64_t vpn, uint64_t key)
{
	uint64_t *s = l->key + (size_t)(vpn & (l->sets - 1)) * l->ways;
	uint32_t i;

	for (i = 0; i < l->ways && s[i] != key; i++)
		;
	if (i == l->ways)	/* miss: the LRU entry goes */
		i = l->ways - 1;
	else if (i == 0)
		return 1;
	{
		int hit = s[i] == key;

		for (; i > 0; i--)
			s[i] = s[i - 1];
		s[0] = key;
		return hit;
	}
}

/* dtlb_ways / stlb_ways 0: fully associative.  Returns 0 or -1. */
static inline int tlb_init(struct tlb *t, uint32_t dtlb, uint32_t dtlb_ways, uint32_t stlb,
			   uint32_t stlb_ways, uint64_t c_stlb, uint64_t c_walk)
{
	t->last = 0;
	t->c_stlb = c_stlb;
	t->c_walk = c_walk;
	t->l2.key = NULL;
	return tlb_level_init(&t->l1, dtlb, dtlb_ways) || tlb_level_init(&t->l2, stlb, stlb_ways) ? -1 : 0;
}

static inline void tlb_free(struct tlb *t)
{
	free(t->l1.key);
	free(t->l2.key);
}

/* On a 2 MiB page: the virtual and physical addresses agree within it. */
static inline int tlb_huge(uint64_t vaddr, uint64_t pa)
{
	return ((vaddr ^ pa) & TLB_HUGE_MASK) == 0;
}

/* The translation of vaddr on a page of that size: TLB_HIT (the L1 DTLB),
 * TLB_STLB (the L2 DTLB) or TLB_WALK; both levels hold it afterwards. */
static inline enum tlb_result tlb_lookup(struct tlb *t, uint64_t vaddr, int huge)
{
	uint64_t vpn = (vaddr & TLB_VA_MASK) >> (huge ? 21 : 12), key = (vpn << 1 | (uint64_t)huge) + 1;

	if (key == t->last)
		return TLB_HIT;
	t->last = key;
	if (tlb_level_access(&t->l1, vpn, key))
		return TLB_HIT;
	return tlb_level_access(&t->l2, vpn, key) ? TLB_STLB : TLB_WALK;
}

/* The synthetic physical address of the leaf entry a walk of vaddr loads. */
static inline uint64_t tlb_leaf(uint64_t vaddr, int huge)
{
	uint64_t va = vaddr & TLB_VA_MASK;

	return huge ? TLB_PMD_BASE + (va >> 21) * 8 : TLB_PT_BASE + (va >> 12) * 8;
}

#endif /* LLCSIM_TLB_H */
