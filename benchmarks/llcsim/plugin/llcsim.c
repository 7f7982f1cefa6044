/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * llcsim - QEMU (7.2, system mode) TCG plugin: a three-level data cache
 * model fed with the guest-physical address of every guest memory access.
 *
 *   private L1d and L2 per vCPU, a shared LLC (or one per domain of vCPUs,
 *   llc_domains=); all physically indexed,
 *   set-associative, LRU or random replacement, write-allocate, an optional
 *   stride prefetcher per vCPU (pf=), no coherence/invalidations, no
 *   instruction fetches; an access counts for the line of its first byte.
 *
 * Counters: per vCPU x tag x mode (user/kernel by the instruction's virtual
 * address) - instructions, data accesses, L1 misses (= L2 accesses), L2
 * misses (= LLC accesses), LLC misses.  Tag 0 collects everything outside a
 * measured region.
 *
 * Guest control: a magic 8-byte NOP, "nopl disp32(%rax,%rax,1)"
 * (0f 1f 84 00 <disp32>) with disp32 = 0x4C5 << 20 | cmd << 16 | arg.
 * The plugin recognises it at translation time and acts when it executes:
 *   cmd 1 BEGIN  arg=tag: zero the tag's counters (all vCPUs), this vCPU's
 *                current tag := tag
 *   cmd 2 END    arg=tag: this vCPU's current tag := 0, dump the tag's
 *                counters (summed over vCPUs) to the output file
 *   cmd 3 RESUME arg=tag: current tag := tag (no reset)
 *   cmd 4 TRACE  arg=n: log the physical address of the next n data accesses
 *                of this vCPU
 *   cmd 5 FLUSH: invalidate this vCPU's L1/L2 and the whole LLC (every domain's)
 *   cmd 6 WAYS   arg=mask: this vCPU fills only the LLC ways whose bits are
 *                set (a class of service of Intel CAT / AMD L3 QoS; it still
 *                hits in every way); 0 = all ways
 * Counters follow the vCPU, so a measured process must stay on one vCPU
 * (the guest programs pin themselves).
 *
 * Thread safety: under MTTCG every vCPU runs in its own host thread.  The
 * private caches and a vCPU's counters are only written by that thread; the
 * shared LLC is protected by striped spinlocks (one per group of sets).
 *
 * Arguments (-plugin libllcsim.so,arg=value,...):
 *   llc=2M llc_ways=16 l2=256K l2_ways=8 (l2=0: no L2) l1=32K l1_ways=8
 *   llc_domains=N: N last-level caches of llc= each, vCPU i using number
 *     i * N / vcpus (4 vCPUs, N=2: vCPUs 0-1 share one, 2-3 the other)
 *   line=64 repl=lru|random|srrip|pacman (every level)
 *     llc_repl=lru|random|srrip|pacman (the LLC's, default repl's; pacman:
 *     SRRIP with prefetch fills at distant, cachemodel.h) seed=1 out=FILE (default stderr)
 *     llc_repl=pacman:F (F 0..1): that fraction of the prefetch fills
 *     inserted as SRRIP's fills (bimodal), the rest at distant
 *     llc_repl=pacman:F:D: and every D-th fill into a set ages its lines
 *     (protection wears off with the fills a line waits; cachemodel.h)
 *   sim=always|tagged (tagged: skip accesses of vCPUs whose tag is 0)
 *   cpi=1.0 lat_l2=12 lat_llc=40 lat_mem=200 (timing model, printed cycles;
 *     cpi: the cost of an instruction that does not miss the L1, fractional)
 *   cpi_dyn=C (default: cpi): the cost of such an instruction of user code
 *     at or above 4 GiB, i.e. of dynamically linked programs (PIE and shared
 *     libraries: PostgreSQL, libc); the guest's own loop programs are static
 *     at 0x400000 and keep cpi.  A base CPI is a property of the code (its
 *     instruction-level parallelism): the loops' dependent adds run at one
 *     instruction a cycle natively, PostgreSQL's executor at about three.
 *   lat_seq=200: cost of an LLC miss to the line after one of the vCPU's last
 *     4 LLC-missed lines (a stream a prefetcher would cover); = lat_mem: off
 *   rob=W mshr=M ram=FILE: overlap of L1 misses (memory-level parallelism),
 *     an occupancy model of an out-of-order core: every L1 miss is
 *     outstanding from its issue for the latency of the level that serves
 *     it (lat_l2, lat_llc, lat_mem; a stream's lat_seq stays additive).  It
 *     issues at once, unless it follows a pointer an outstanding miss loaded
 *     (its virtual address lies in the 64 bytes from that value: a pointer
 *     chase, a hash chain), then when that one completes.  The vCPU's time
 *     stops when a miss finds M misses outstanding (until the first
 *     completes), and when its instructions pass W beyond an outstanding
 *     miss (the reorder buffer is full behind it: until it completes,
 *     evaluated per translation block), so a miss hides at most W x cpi
 *     cycles however many instructions follow it.  The values are read from the
 *     guest RAM, which QEMU keeps in FILE (memory-backend-file, share=on;
 *     guest-physical address = file offset, so -m must stay below the PCI
 *     hole).  rob=0 (default): every L1 miss costs its level's latency
 *     (additive).  Index-linked structures (next = an array index) look
 *     independent; a 32-bit pointer (a 4-byte load) is seen.  The model is
 *     plugin/timing.h.
 *   grid_cpi=A:B.. grid_rob=W1:W2.. grid_mshr=M1:M2.. (with rob=, at most 64
 *     points): every combination is a further timing model fed with the same
 *     accesses (the caches do not depend on time), inside measured regions
 *     only (tag != 0: outside, their misses are not tracked, so a region
 *     starts without the ones still in flight); dumps add gK_u_cycles=,
 *     the config line gK=cpi:rob:mshr (a point's CPI is every
 *     instruction's, cpi_dyn='s too).  For fitting the timing in one
 *     guest run (run.sh calibrate, run.sh cpi-dyn).
 *   pf=D pf_streams=16 pf_xlat=16: a stride prefetcher per vCPU
 *     (plugin/prefetch.h), D lines ahead (0 = off, the default): trained on
 *     the L1 misses' virtual lines, it fills the L2 and the LLC (not the
 *     L1) at once, counted (pf=, pfm= of them missed the LLC), not charged;
 *     a prefetched line costs what its level costs when it is used.
 *     pf_xlat: 2^N pages of translations it may prefetch into (0: none,
 *     prefetches stop at the 4 KiB page).
 *   pf_fill=C (cycles, 0 = off, the default): a vCPU's prefetch fills from
 *     memory arrive one every C cycles at most (plugin/access.h: the
 *     prefetcher hides their latency, not the rate a core takes lines from
 *     memory); an access that finds a line before its fill arrived waits
 *     for it.  Counted in the dumps: pfw= (such accesses), pfwait= (cycles).
 *   dtlb=E dtlb_ways=W stlb=E stlb_ways=W lat_stlb=7 lat_walk=30: data TLBs
 *     per vCPU (plugin/tlb.h; dtlb=0, the default: none, translation is
 *     free): an L1 DTLB and an L2 DTLB (STLB) of E entries, W ways (0:
 *     fully associative), 4 KiB and 2 MiB pages (told apart by the
 *     addresses: virtual and physical agree in their low 21 bits on a
 *     2 MiB page); an STLB hit adds lat_stlb cycles to the access, a miss
 *     walks the page table: lat_stlb + lat_walk + the load of its leaf
 *     entry (a synthetic physical address, through the L2, the LLC and
 *     memory).  Counted in the dumps: stlb= (STLB hits), walk=, walkm=
 *     (leaf from memory), walkh= (walks of 2 MiB pages), xlat= (cycles).
 *   bw_peak=P bw_umax=U bw_slot=S: memory-bandwidth contention
 *     (bandwidth.h): P lines per 1000 cycles (0 = off), u capped at U, a
 *     window of 16 slots of S cycles (default: the sync quantum, 1000 when
 *     sync is off)
 *   sync=Q (cycles, 0 = off): modeled-time synchronisation - a vCPU whose
 *     modeled clock is more than Q cycles ahead of another running vCPU's
 *     waits (sched_yield) until that one catches up, at most 50 ms per wait
 *     (so QEMU-internal waits between vCPU threads cannot deadlock).  Halted
 *     vCPUs do not count; a vCPU that wakes up takes the running ones' clock.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <qemu-plugin.h>

#include "cachemodel.h"
#include "prefetch.h"
#include "timing.h"
#include "bandwidth.h"
#include "tlb.h"
#include "access.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAGIC_HI	0x4C5u
#define CMD_BEGIN	1
#define CMD_END		2
#define CMD_RESUME	3
#define CMD_TRACE	4
#define CMD_FLUSH	5
#define CMD_WAYS	6
#define MAX_DOMAINS	16
#define MAX_TAGS	4096
#define NLOCKS		1024
#define KERNEL_VADDR	0xffff800000000000ull
#define MAX_MSHR	TM_MAX_MSHR
#define MAX_GRID	64
#define DYN_VADDR	0x100000000ull	/* cpi_dyn= from here (user mode) */

enum { F_INSNS, F_DYN, F_ACC, F_L1M, F_L2M, F_LLCM, F_SEQM, F_OVLM, F_STALL, F_PF, F_PFM, F_BWX, F_BWL,
       F_STLB, F_WALK, F_WALKM, F_WALKH, F_XLAT, F_XADD, F_PFW, F_PFWL, NF };
enum { M_USER, M_KERNEL, NM };

struct vcpu {
	struct cm_cache l1, l2;
	uint64_t rng;
	uint32_t tag;
	uint32_t trace_left;
	uint64_t (*stats)[NM][NF];	/* [MAX_TAGS][NM][NF] */
	uint64_t clock;			/* modeled centicycles (atomic) */
	int idle;			/* halted (atomic) */
	struct acc_path path;		/* access.h: its caches, prefetcher, memory */
	uint64_t icount;		/* instructions executed */
	struct tm_core tm;		/* outstanding L1 misses (rob=) */
	struct pf pf;			/* stride prefetcher (pf=) */
	struct tlb tlb;			/* data TLBs (dtlb=) */
	struct shadow {			/* the timings of grid= */
		struct tm_core tm;
		uint64_t extra;		/* centicycles: its clock less icount x its CPI */
	} *grid;
	uint64_t *gstall;		/* [MAX_TAGS][ngrid]: user-mode stall */
	uint64_t waits, wait_timeouts;
	struct cm_cache *llc;		/* its domain's LLC */
	uint64_t ways;			/* LLC ways it may fill (CMD_WAYS) */
	char pad[64];
};

static const char *const repl_name[] = { [CM_LRU] = "lru", [CM_RANDOM] = "random", [CM_SRRIP] = "srrip",
					  [CM_PACMAN] = "pacman" };

/* "lru", "random", "srrip" or "pacman" into *r; -1 for anything else */
static int parse_repl(const char *val, enum cm_repl *r)
{
	for (size_t i = 0; i < sizeof(repl_name) / sizeof(repl_name[0]); i++) {
		if (!strcmp(val, repl_name[i])) {
			*r = (enum cm_repl)i;
			return 0;
		}
	}
	return -1;
}

static struct {
	uint64_t l1, l2, llc;
	uint32_t l1_ways, l2_ways, llc_ways, line;
	unsigned int llc_domains;
	enum cm_repl repl, llc_repl;	/* llc_repl: the LLC's (default: repl) */
	double llc_pf_near;		/* pacman: prefetch fills inserted as SRRIP's */
	unsigned long llc_decay;	/* pacman: fills into a set per ageing, 0 = none */
	uint64_t seed;
	bool tagged;
	double cpi, cpi_dyn, lat_l2, lat_llc, lat_mem, lat_seq;
	uint64_t sync;			/* quantum, centicycles; 0 = off */
	uint64_t rob;			/* instruction window; 0 = no overlap */
	unsigned mshr;			/* outstanding misses */
	unsigned int pf, pf_streams, pf_xlat;	/* prefetch distance (lines), table, 2^ pages */
	double pf_fill;			/* cycles a prefetch fill from memory takes of the core's path (0: free) */
	double bw_peak, bw_umax;	/* lines per 1000 cycles (0 = off), cap of u */
	uint64_t bw_slot;		/* cycles per slot of the traffic window (0: sync's) */
	unsigned int dtlb, dtlb_ways, stlb, stlb_ways;	/* TLB entries (dtlb 0: no TLBs) */
	double lat_stlb, lat_walk;	/* an STLB hit; a walk beyond its leaf load */
	char *out, *ram;
} cfg = {
	.l1 = 32 << 10, .l2 = 256 << 10, .llc = 2 << 20,
	.l1_ways = 8, .l2_ways = 8, .llc_ways = 16, .line = 64,
	.repl = CM_LRU, .llc_repl = (enum cm_repl)-1, .seed = 1, .tagged = false,
	.cpi = 1.0, .lat_l2 = 12, .lat_llc = 40, .lat_mem = 200, .lat_seq = -1,
	.mshr = 10, .llc_domains = 1,
	.pf = 0, .pf_streams = 16, .pf_xlat = 16,
	.bw_peak = 0, .bw_umax = 0.9, .bw_slot = 0,
	.dtlb = 0, .dtlb_ways = 0, .stlb = 3072, .stlb_ways = 12, .lat_stlb = 7, .lat_walk = 30,
};
/* grid=: the cartesian product of grid_cpi x grid_rob x grid_mshr, each a
 * timing evaluated beside the main one on the same accesses */
static struct gridpt { double cpi; uint64_t c_cpi, rob; unsigned int mshr; } gridpts[MAX_GRID];
static unsigned int ngrid;
static double grid_cpi[8], grid_rob[8], grid_mshr[8];
static unsigned int ngrid_cpi, ngrid_rob, ngrid_mshr;
/* integer centicycle versions for the clocks */
static uint64_t c_cpi, c_cpi_dyn, c_l2, c_llc, c_mem, c_seq;

static struct cm_cache llcs[MAX_DOMAINS];
static struct bw_model bw;		/* the memory all vCPUs share (bw_peak=) */
static volatile char llc_lock[NLOCKS];	/* for every domain's sets */
static struct vcpu *vcpus;
static int nvcpus;
static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seq;
static const unsigned char *ram;	/* guest RAM (cfg.ram), read only */
static uint64_t ram_size;

static inline void lock_set(uint32_t s)
{
	volatile char *l = &llc_lock[s & (NLOCKS - 1)];
	while (__atomic_test_and_set(l, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			;
}

static inline void unlock_set(uint32_t s)
{
	__atomic_clear(&llc_lock[s & (NLOCKS - 1)], __ATOMIC_RELEASE);
}

/* The value a load of 1 << shift bytes (at most 8) at guest-physical pa
 * read (x86: little endian, as the host); 0 when RAM is not mapped. */
static uint64_t ram_value(uint64_t pa, unsigned int shift)
{
	uint64_t val = 0;
	size_t n = shift < 3 ? (size_t)1 << shift : sizeof(val);

	if (ram && pa + n <= ram_size)
		memcpy(&val, ram + pa, n);
	return val;
}

/* The value an access read, for the overlap model: 0 for a store. */
static uint64_t loaded(uint64_t pa, qemu_plugin_meminfo_t info)
{
	return qemu_plugin_mem_is_store(info) ? 0 : ram_value(pa, qemu_plugin_mem_size_shift(info));
}

/*
 * Advance the vCPU's modeled time for an L1 miss served after lat
 * centicycles: all of it (additive timing), or the stall the overlap model
 * says; returns what was charged.
 */
static uint64_t charge(struct vcpu *v, uint64_t *s, uint64_t vaddr, uint64_t pa,
		       qemu_plugin_meminfo_t info, uint64_t lat, uintptr_t mode)
{
	uint64_t val = cfg.rob ? loaded(pa, info) : 0;
	unsigned int k;

	/* the grid's timings run in measured regions only (they are many) */
	for (k = 0; v->tag && k < ngrid; k++) {
		struct shadow *g = &v->grid[k];
		uint64_t st = tm_stall(&g->tm, v->icount * gridpts[k].c_cpi + g->extra, v->icount,
				       vaddr, val, lat);

		g->extra += st;
		if (mode == M_USER)
			v->gstall[(size_t)v->tag * ngrid + k] += st;
	}
	if (cfg.rob) {
		lat = tm_stall(&v->tm, v->clock, v->icount, vaddr, val, lat);
		s[F_STALL] += lat;
	}
	__atomic_store_n(&v->clock, v->clock + lat, __ATOMIC_RELAXED);
	return lat;
}

/* Additive time (a prefetched stream's lat_seq) on every clock. */
static void charge_additive(struct vcpu *v, uint64_t lat)
{
	unsigned int k;

	for (k = 0; k < ngrid; k++)
		v->grid[k].extra += lat;
	__atomic_store_n(&v->clock, v->clock + lat, __ATOMIC_RELAXED);
}

/* access.h's hooks: an access under way on a vCPU */
struct acc_ctx {
	struct vcpu *v;
	uint64_t *s;			/* its counters (tag, mode) */
	uint64_t vaddr, pa;
	qemu_plugin_meminfo_t info;
	uintptr_t mode;
};

/* The vCPU's domain's LLC, under the set's lock, within its ways. */
static int llc_lookup(void *ctx, uint64_t pa, int pf)
{
	struct acc_ctx *x = ctx;
	uint32_t set = cm_set_of(x->v->llc, pa);
	int hit;

	lock_set(set);
	hit = cm_access_pf(x->v->llc, pa, &x->v->rng, x->v->ways, pf);
	unlock_set(set);
	return hit;
}

/* An L1 miss: counted, and charged by the overlap model (or all of it,
 * additive); a prefetched stream's lat_seq always additively.  F_BWX:
 * what the bandwidth term added outside the overlap model's stalls. */
static void charge_miss(void *ctx, enum acc_level level, uint64_t lat, uint64_t base)
{
	struct acc_ctx *x = ctx;
	uint64_t *s = x->s, xl = x->v->path.xlat;

	s[F_XLAT] += xl;
	if (!cfg.rob)		/* additive: cycles_of() adds the translations */
		s[F_XADD] += xl;
	if (level == ACC_L1) {	/* an L1 hit whose translation took time */
		charge(x->v, s, x->vaddr, x->pa, x->info, lat, x->mode);
		return;
	}
	s[F_L1M]++;
	s[F_L2M] += level != ACC_L2;
	if (level == ACC_L2 || level == ACC_LLC) {
		/* lat - base: the wait for a paced prefetch fill (pf_fill=) */
		s[F_PFW] += lat > base;
		s[F_PFWL] += lat - base;
		charge(x->v, s, x->vaddr, x->pa, x->info, lat, x->mode);
		return;
	}
	s[F_LLCM]++;
	s[F_BWL] += lat - base;
	if (level == ACC_SEQ) {
		s[F_SEQM]++;
		s[F_BWX] += lat - base;
		if (cfg.rob)	/* lat_seq's F_SEQM x lat_seq leaves it out */
			s[F_XADD] += xl;
		charge_additive(x->v, lat);
		return;
	}
	if (!cfg.rob)
		s[F_BWX] += lat - base;
	s[F_OVLM] += cfg.rob && charge(x->v, s, x->vaddr, x->pa, x->info, lat, x->mode) == 0;
}

/* A translation that missed the L1 DTLB: counted (its time is in the
 * access's charge). */
static void xlated(void *ctx, enum tlb_result r, enum acc_level leaf, int huge)
{
	uint64_t *s = ((struct acc_ctx *)ctx)->s;

	s[F_STLB] += r == TLB_STLB;
	s[F_WALK] += r == TLB_WALK;
	s[F_WALKM] += r == TLB_WALK && leaf == ACC_MEM;
	s[F_WALKH] += r == TLB_WALK && huge;
}

/* A line the prefetcher put into the L2 and the LLC (not the L1), in no
 * time: counted, not charged. */
static void prefetched(void *ctx, int llc_hit)
{
	uint64_t *s = ((struct acc_ctx *)ctx)->s;

	s[F_PF]++;
	s[F_PFM] += !llc_hit;
}

static void vcpu_mem(unsigned int idx, qemu_plugin_meminfo_t info,
		     uint64_t vaddr, void *ud)
{
	struct vcpu *v;
	struct qemu_plugin_hwaddr *hw;
	struct acc_ctx x;
	uint64_t pa, *s;

	if (idx >= (unsigned int)nvcpus)
		return;
	v = &vcpus[idx];
	if (cfg.tagged && !v->tag)
		return;
	hw = qemu_plugin_get_hwaddr(info, vaddr);
	if (!hw || qemu_plugin_hwaddr_is_io(hw))
		return;
	pa = qemu_plugin_hwaddr_phys_addr(hw);
	if (v->trace_left) {
		v->trace_left--;
		pthread_mutex_lock(&out_lock);
		fprintf(out, "trace vcpu=%u tag=%u vaddr=0x%" PRIx64 " pa=0x%" PRIx64 " %s\n",
			idx, v->tag, vaddr, pa,
			qemu_plugin_mem_is_store(info) ? "store" : "load");
		fflush(out);
		pthread_mutex_unlock(&out_lock);
	}
	s = v->stats[v->tag][(uintptr_t)ud];
	s[F_ACC]++;
	x = (struct acc_ctx){ .v = v, .s = s, .vaddr = vaddr, .pa = pa, .info = info, .mode = (uintptr_t)ud };
	/* the prefetcher learns user pages only: the kernel's direct map (page
	 * zeroing at every fault) would push a stream's translations out */
	acc_access(&v->path, &x, vaddr, pa, (uintptr_t)ud == M_USER);
}

/* Lowest clock of the other running vCPUs, UINT64_MAX if none. */
static uint64_t min_other_clock(unsigned int idx)
{
	uint64_t m = UINT64_MAX, c;
	int i;
	for (i = 0; i < nvcpus; i++) {
		if ((unsigned int)i == idx || __atomic_load_n(&vcpus[i].idle, __ATOMIC_RELAXED))
			continue;
		c = __atomic_load_n(&vcpus[i].clock, __ATOMIC_RELAXED);
		if (c < m)
			m = c;
	}
	return m;
}

static void sync_wait(unsigned int idx, struct vcpu *v)
{
	struct timespec t0, t;
	int started = 0;
	for (;;) {
		uint64_t m = min_other_clock(idx);
		if (m == UINT64_MAX || v->clock <= m + cfg.sync)
			return;
		if (!started) {
			clock_gettime(CLOCK_MONOTONIC, &t0);
			started = 1;
			v->waits++;
		} else {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > 50000000L) {
				v->wait_timeouts++;
				return;
			}
		}
		sched_yield();
	}
}

static void vcpu_idle(qemu_plugin_id_t id, unsigned int idx)
{
	if (idx < (unsigned int)nvcpus)
		__atomic_store_n(&vcpus[idx].idle, 1, __ATOMIC_RELAXED);
}

/*
 * A translation block's n instructions start: they advance every clock by
 * n x its CPI (the main clock: cpi_dyn= for dynamically linked code), and by the stall of each outstanding miss whose reorder
 * buffer they fill (timing.h tm_retire), counted as a miss's stall is in
 * charge(); the block's misses then come to charge() at the new icount.
 */
static void vcpu_tb_exec(unsigned int idx, void *ud)
{
	uintptr_t d = (uintptr_t)ud, mode = d >> 31, dyn = d >> 30 & 1;
	uint64_t n = d & 0x3fffffff, st = 0, c = dyn ? c_cpi_dyn : c_cpi;
	struct vcpu *v;
	unsigned int k;

	if (idx >= (unsigned int)nvcpus)
		return;
	v = &vcpus[idx];
	v->stats[v->tag][mode][F_INSNS] += n;
	v->stats[v->tag][mode][F_DYN] += dyn * n;
	if (__atomic_load_n(&v->idle, __ATOMIC_RELAXED)) {
		/* woke up: time went on while halted */
		uint64_t m = min_other_clock(idx);
		if (m != UINT64_MAX && m > v->clock) {
			for (k = 0; k < ngrid; k++)
				v->grid[k].extra += m - v->clock;
			__atomic_store_n(&v->clock, m, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&v->idle, 0, __ATOMIC_RELAXED);
	}
	/* the grid's timings run in measured regions only, as in charge() */
	for (k = 0; v->tag && k < ngrid; k++) {
		struct shadow *g = &v->grid[k];
		uint64_t gs = tm_retire(&g->tm, v->icount * gridpts[k].c_cpi + g->extra, v->icount, n,
					gridpts[k].c_cpi);

		g->extra += gs;
		if (mode == M_USER)
			v->gstall[(size_t)v->tag * ngrid + k] += gs;
	}
	if (cfg.rob) {
		st = tm_retire(&v->tm, v->clock, v->icount, n, c);
		v->stats[v->tag][mode][F_STALL] += st;
	}
	v->icount += n;
	__atomic_store_n(&v->clock, v->clock + n * c + st, __ATOMIC_RELAXED);
	if (cfg.sync)
		sync_wait(idx, v);
}

static double cycles_of(const uint64_t *f)
{
	double base = (f[F_INSNS] - f[F_DYN]) * cfg.cpi + f[F_DYN] * cfg.cpi_dyn;

	/* F_BWX: what bandwidth contention added to the charges outside the
	 * overlap model's stalls (which hold their own share of it) */
	if (cfg.rob)	/* the stalls the L1 misses caused */
		return base + (double)f[F_STALL] / 100 + (double)f[F_SEQM] * cfg.lat_seq +
		       (double)f[F_BWX] / 100 + (double)f[F_XADD] / 100;
	return base + (double)(f[F_L1M] - f[F_L2M]) * cfg.lat_l2 +
	       (double)(f[F_L2M] - f[F_LLCM]) * cfg.lat_llc +
	       (double)(f[F_LLCM] - f[F_SEQM]) * cfg.lat_mem + (double)f[F_SEQM] * cfg.lat_seq +
	       (double)f[F_BWX] / 100 + (double)f[F_XADD] / 100 + (double)f[F_PFWL] / 100;
}

static void dump_tag(unsigned int ender, uint32_t tag)
{
	uint64_t sum[NM][NF] = { { 0 } }, gsum[MAX_GRID] = { 0 };
	char per[256];
	size_t n = 0;
	unsigned int k;
	int i, m, f;

	per[0] = 0;
	for (i = 0; i < nvcpus; i++) {
		uint64_t acc = 0;
		for (m = 0; m < NM; m++) {
			for (f = 0; f < NF; f++)
				sum[m][f] += vcpus[i].stats[tag][m][f];
			acc += vcpus[i].stats[tag][m][F_ACC];
		}
		for (k = 0; k < ngrid; k++)
			gsum[k] += vcpus[i].gstall[(size_t)tag * ngrid + k];
		if (n < sizeof(per) - 32)
			n += snprintf(per + n, sizeof(per) - n, "%s%" PRIu64, i ? "/" : "", acc);
	}
	pthread_mutex_lock(&out_lock);
	fprintf(out, "dump seq=%" PRIu64 " tag=%u vcpu=%u", ++seq, tag, ender);
	for (m = 0; m < NM; m++) {
		const char *p = m == M_USER ? "u" : "k";
		fprintf(out, " %s_insns=%" PRIu64 " %s_dyn=%" PRIu64 " %s_acc=%" PRIu64 " %s_l1m=%" PRIu64
			" %s_l2m=%" PRIu64 " %s_llcm=%" PRIu64 " %s_seqm=%" PRIu64 " %s_ovlm=%" PRIu64
			" %s_stall=%" PRIu64 " %s_cycles=%.0f %s_pf=%" PRIu64 " %s_pfm=%" PRIu64
			" %s_bwlat=%" PRIu64 " %s_stlb=%" PRIu64 " %s_walk=%" PRIu64 " %s_walkm=%" PRIu64
			" %s_walkh=%" PRIu64 " %s_xlat=%" PRIu64 " %s_pfw=%" PRIu64 " %s_pfwait=%" PRIu64,
			p, sum[m][F_INSNS], p, sum[m][F_DYN], p, sum[m][F_ACC], p, sum[m][F_L1M],
			p, sum[m][F_L2M], p, sum[m][F_LLCM], p, sum[m][F_SEQM], p, sum[m][F_OVLM],
			p, sum[m][F_STALL] / 100, p, cycles_of(sum[m]), p, sum[m][F_PF], p, sum[m][F_PFM],
			p, sum[m][F_BWL] / 100, p, sum[m][F_STLB], p, sum[m][F_WALK], p, sum[m][F_WALKM],
			p, sum[m][F_WALKH], p, sum[m][F_XLAT] / 100, p, sum[m][F_PFW], p, sum[m][F_PFWL] / 100);
	}
	/* each grid timing's user-mode cycles: its stalls, its CPI */
	for (k = 0; k < ngrid; k++)
		fprintf(out, " g%u_u_cycles=%.0f", k, sum[M_USER][F_INSNS] * gridpts[k].cpi +
			(double)gsum[k] / 100 + (double)sum[M_USER][F_SEQM] * cfg.lat_seq +
			(double)sum[M_USER][F_XADD] / 100);
	fprintf(out, " acc_by_vcpu=%s\n", per);
	fflush(out);
	pthread_mutex_unlock(&out_lock);
}

static void vcpu_magic(unsigned int idx, void *ud)
{
	uint32_t d = (uint32_t)(uintptr_t)ud;
	uint32_t cmd = (d >> 16) & 0xf, arg = d & 0xffff;
	struct vcpu *v;
	int i;

	if (idx >= (unsigned int)nvcpus)
		return;
	v = &vcpus[idx];
	switch (cmd) {
	case CMD_BEGIN:
		if (arg >= MAX_TAGS)
			break;
		for (i = 0; i < nvcpus; i++) {
			memset(vcpus[i].stats[arg], 0, sizeof(vcpus[i].stats[arg]));
			if (ngrid)
				memset(vcpus[i].gstall + (size_t)arg * ngrid, 0, ngrid * sizeof(uint64_t));
		}
		v->tag = arg;
		break;
	case CMD_END:
		v->tag = 0;
		if (arg < MAX_TAGS)
			dump_tag(idx, arg);
		break;
	case CMD_RESUME:
		if (arg < MAX_TAGS)
			v->tag = arg;
		break;
	case CMD_TRACE:
		v->trace_left = arg;
		break;
	case CMD_FLUSH:
		cm_flush(&v->l1);
		if (cfg.l2)
			cm_flush(&v->l2);
		for (i = 0; i < NLOCKS; i++)
			lock_set(i);
		for (i = 0; i < (int)cfg.llc_domains; i++)
			cm_flush(&llcs[i]);
		for (i = 0; i < NLOCKS; i++)
			unlock_set(i);
		break;
	case CMD_WAYS:
		v->ways = arg ? arg : CM_ALL_WAYS;
		break;
	default:
		break;
	}
}

static int magic_of(struct qemu_plugin_insn *insn, uint32_t *disp)
{
	const uint8_t *b;

	if (qemu_plugin_insn_size(insn) != 8)
		return 0;
	b = qemu_plugin_insn_data(insn);
	if (b[0] != 0x0f || b[1] != 0x1f || b[2] != 0x84 || b[3] != 0x00)
		return 0;
	*disp = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
		(uint32_t)b[7] << 24;
	return (*disp >> 20) == MAGIC_HI;
}

static void vcpu_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	uint64_t pc = qemu_plugin_tb_vaddr(tb);
	uintptr_t mode = pc >= KERNEL_VADDR ? M_KERNEL : M_USER;
	uintptr_t dyn = mode == M_USER && pc >= DYN_VADDR;
	uint32_t disp;

	qemu_plugin_register_vcpu_tb_exec_cb(tb, vcpu_tb_exec, QEMU_PLUGIN_CB_NO_REGS,
					     (void *)(uintptr_t)(n | dyn << 30 | mode << 31));
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		qemu_plugin_register_vcpu_mem_cb(insn, vcpu_mem, QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_RW, (void *)mode);
		if (magic_of(insn, &disp))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_magic,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)disp);
	}
}

static void plugin_exit(qemu_plugin_id_t id, void *p)
{
	int i;
	dump_tag(0, 0);
	pthread_mutex_lock(&out_lock);
	for (i = 0; i < nvcpus; i++)
		fprintf(out, "sync vcpu=%d clock_cycles=%" PRIu64 " waits=%" PRIu64 " wait_timeouts=%" PRIu64 "\n",
			i, vcpus[i].clock / 100, vcpus[i].waits, vcpus[i].wait_timeouts);
	fprintf(out, "exit\n");
	fflush(out);
	pthread_mutex_unlock(&out_lock);
	if (out != stderr)
		fclose(out);
}

/* "0.3:0.4:0.5" -> up to 8 positive numbers */
static int parse_list(const char *val, double *v, unsigned int *n)
{
	char *end;

	for (*n = 0; *n < 8; val = end + 1) {
		v[*n] = strtod(val, &end);
		if (end == val || v[*n] <= 0)
			return -1;
		(*n)++;
		if (*end != ':')
			return *end ? -1 : 0;
	}
	return -1;
}

static int parse_arg(const char *a)
{
	const char *eq = strchr(a, '=');
	char key[32];
	const char *val;
	size_t kl;

	if (!eq || (kl = (size_t)(eq - a)) >= sizeof(key))
		return -1;
	memcpy(key, a, kl);
	key[kl] = 0;
	val = eq + 1;
	if (!strcmp(key, "l1"))
		return (cfg.l1 = cm_parse_size(val)) ? 0 : -1;
	if (!strcmp(key, "l2")) {
		cfg.l2 = cm_parse_size(val);
		return (cfg.l2 || !strcmp(val, "0")) ? 0 : -1;
	}
	if (!strcmp(key, "llc"))
		return (cfg.llc = cm_parse_size(val)) ? 0 : -1;
	if (!strcmp(key, "l1_ways"))
		return (cfg.l1_ways = (uint32_t)atoi(val)) ? 0 : -1;
	if (!strcmp(key, "l2_ways"))
		return (cfg.l2_ways = (uint32_t)atoi(val)) ? 0 : -1;
	if (!strcmp(key, "llc_ways"))
		return (cfg.llc_ways = (uint32_t)atoi(val)) ? 0 : -1;
	if (!strcmp(key, "llc_domains"))
		return (cfg.llc_domains = (unsigned int)atoi(val)) >= 1 &&
			cfg.llc_domains <= MAX_DOMAINS ? 0 : -1;
	if (!strcmp(key, "line"))
		return (cfg.line = (uint32_t)cm_parse_size(val)) ? 0 : -1;
	if (!strcmp(key, "repl"))
		return parse_repl(val, &cfg.repl);
	if (!strcmp(key, "llc_repl")) {
		const char *f = strchr(val, ':');
		char name[16];
		char *end;

		if (!f)
			return parse_repl(val, &cfg.llc_repl);
		/* pacman:F, the fraction of prefetch fills inserted near */
		if ((size_t)(f - val) >= sizeof(name))
			return -1;
		memcpy(name, val, f - val);
		name[f - val] = '\0';
		cfg.llc_pf_near = strtod(f + 1, &end);
		if (parse_repl(name, &cfg.llc_repl) || cfg.llc_repl != CM_PACMAN ||
		    end == f + 1 || cfg.llc_pf_near < 0 || cfg.llc_pf_near > 1)
			return -1;
		/* pacman:F:D, every D-th fill into a set ages its lines */
		if (*end == ':') {
			f = end;
			cfg.llc_decay = strtoul(f + 1, &end, 10);
			if (end == f + 1 || cfg.llc_decay > UINT16_MAX)
				return -1;
		}
		return *end ? -1 : 0;
	}
	if (!strcmp(key, "seed"))
		return (cfg.seed = strtoull(val, NULL, 0)) ? 0 : -1;
	if (!strcmp(key, "sim")) {
		if (!strcmp(val, "always"))
			cfg.tagged = false;
		else if (!strcmp(val, "tagged"))
			cfg.tagged = true;
		else
			return -1;
		return 0;
	}
	if (!strcmp(key, "out")) {
		cfg.out = strdup(val);
		return 0;
	}
	if (!strcmp(key, "cpi"))
		return (cfg.cpi = atof(val)) > 0 ? 0 : -1;
	if (!strcmp(key, "cpi_dyn"))
		return (cfg.cpi_dyn = atof(val)) > 0 ? 0 : -1;
	if (!strcmp(key, "lat_l2"))
		return (cfg.lat_l2 = atof(val)) >= 0 ? 0 : -1;
	if (!strcmp(key, "lat_llc"))
		return (cfg.lat_llc = atof(val)) >= 0 ? 0 : -1;
	if (!strcmp(key, "lat_mem"))
		return (cfg.lat_mem = atof(val)) >= 0 ? 0 : -1;
	if (!strcmp(key, "lat_seq"))
		return (cfg.lat_seq = atof(val)) >= 0 ? 0 : -1;
	if (!strcmp(key, "sync")) {
		cfg.sync = strtoull(val, NULL, 0) * 100;
		return 0;
	}
	if (!strcmp(key, "rob")) {
		cfg.rob = strtoull(val, NULL, 0);
		return 0;
	}
	if (!strcmp(key, "mshr"))
		return (cfg.mshr = (unsigned int)atoi(val)) >= 1 && cfg.mshr <= MAX_MSHR ? 0 : -1;
	if (!strcmp(key, "pf"))
		return (cfg.pf = (unsigned int)atoi(val)) <= PF_MAX_DIST ? 0 : -1;
	if (!strcmp(key, "pf_streams"))
		return (cfg.pf_streams = (unsigned int)atoi(val)) >= 1 &&
			cfg.pf_streams <= PF_MAX_STREAMS ? 0 : -1;
	if (!strcmp(key, "pf_fill"))
		return (cfg.pf_fill = atof(val)) >= 0 ? 0 : -1;
	if (!strcmp(key, "pf_xlat"))
		return (cfg.pf_xlat = (unsigned int)atoi(val)) <= 24 ? 0 : -1;
	if (!strcmp(key, "bw_peak"))
		return (cfg.bw_peak = atof(val)) >= 0 ? 0 : -1;
	if (!strcmp(key, "bw_umax"))
		return (cfg.bw_umax = atof(val)) >= 0 && cfg.bw_umax < 1 ? 0 : -1;
	if (!strcmp(key, "bw_slot"))
		return (cfg.bw_slot = strtoull(val, NULL, 0)) > 0 ? 0 : -1;
	if (!strcmp(key, "dtlb"))
		return (cfg.dtlb = (unsigned int)atoi(val)) <= 4096 ? 0 : -1;
	if (!strcmp(key, "dtlb_ways"))
		return (cfg.dtlb_ways = (unsigned int)atoi(val)) <= 4096 ? 0 : -1;
	if (!strcmp(key, "stlb"))
		return (cfg.stlb = (unsigned int)atoi(val)) >= 1 && cfg.stlb <= 65536 ? 0 : -1;
	if (!strcmp(key, "stlb_ways"))
		return (cfg.stlb_ways = (unsigned int)atoi(val)) <= 65536 ? 0 : -1;
	if (!strcmp(key, "lat_stlb"))
		return (cfg.lat_stlb = atof(val)) >= 0 ? 0 : -1;
	if (!strcmp(key, "lat_walk"))
		return (cfg.lat_walk = atof(val)) >= 0 ? 0 : -1;
	if (!strcmp(key, "grid_cpi"))
		return parse_list(val, grid_cpi, &ngrid_cpi);
	if (!strcmp(key, "grid_rob"))
		return parse_list(val, grid_rob, &ngrid_rob);
	if (!strcmp(key, "grid_mshr"))
		return parse_list(val, grid_mshr, &ngrid_mshr);
	if (!strcmp(key, "ram")) {
		cfg.ram = strdup(val);
		return 0;
	}
	return -1;
}

/* Map QEMU's guest RAM file (read only) to read the values of missed loads. */
static int map_ram(const char *path)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		perror(path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror(path);
		return -1;
	}
	ram = p;
	ram_size = (uint64_t)st.st_size;
	return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	if (!info->system_emulation) {
		fprintf(stderr, "llcsim: needs system emulation (physical addresses)\n");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (parse_arg(argv[i])) {
			fprintf(stderr, "llcsim: bad argument '%s'\n", argv[i]);
			return -1;
		}
	}
	if (cfg.lat_seq < 0)
		cfg.lat_seq = cfg.lat_mem;
	if (cfg.rob && !cfg.ram) {
		fprintf(stderr, "llcsim: rob= needs ram= (the guest RAM file) to see dependent misses\n");
		return -1;
	}
	if (cfg.ram && map_ram(cfg.ram))
		return -1;
	if (cfg.cpi_dyn == 0)
		cfg.cpi_dyn = cfg.cpi;
	c_cpi = (uint64_t)(cfg.cpi * 100 + 0.5);
	c_cpi_dyn = (uint64_t)(cfg.cpi_dyn * 100 + 0.5);
	c_l2 = (uint64_t)(cfg.lat_l2 * 100 + 0.5);
	c_llc = (uint64_t)(cfg.lat_llc * 100 + 0.5);
	c_mem = (uint64_t)(cfg.lat_mem * 100 + 0.5);
	c_seq = (uint64_t)(cfg.lat_seq * 100 + 0.5);
	/*
	 * A vCPU may run up to a sync quantum ahead of another, so a window of
	 * BW_SLOTS shorter slots would hold only part of a lagging vCPU's
	 * traffic (1000-cycle slots and sync=10000: 5 of 16 slots, u at 5/16
	 * of its rate): slots of one quantum see at least 14 of 16.
	 */
	if (!cfg.bw_slot)
		cfg.bw_slot = cfg.sync ? cfg.sync / 100 : 1000;
	bw_init(&bw, cfg.bw_peak, cfg.bw_umax, cfg.bw_slot);
	if (ngrid_cpi || ngrid_rob || ngrid_mshr) {
		unsigned int a, b, c;

		if (!cfg.rob || !ngrid_cpi || !ngrid_rob || !ngrid_mshr ||
		    ngrid_cpi * ngrid_rob * ngrid_mshr > MAX_GRID) {
			fprintf(stderr, "llcsim: grid_cpi, grid_rob, grid_mshr go together, with rob=, at most %d points\n",
				MAX_GRID);
			return -1;
		}
		for (a = 0; a < ngrid_cpi; a++)
			for (b = 0; b < ngrid_rob; b++)
				for (c = 0; c < ngrid_mshr; c++) {
					struct gridpt *g = &gridpts[ngrid++];

					g->cpi = grid_cpi[a];
					g->c_cpi = (uint64_t)(g->cpi * 100 + 0.5);
					g->rob = (uint64_t)grid_rob[b];
					g->mshr = (unsigned int)grid_mshr[c];
					if (g->mshr > MAX_MSHR) {
						fprintf(stderr, "llcsim: grid_mshr above %d\n", MAX_MSHR);
						return -1;
					}
				}
	}
	if (cfg.llc_ways > 16) {
		/* CMD_WAYS carries a 16-bit mask */
		fprintf(stderr, "llcsim: llc_ways above 16\n");
		return -1;
	}
	if ((int)cfg.llc_repl < 0)
		cfg.llc_repl = cfg.repl;
	for (i = 0; i < (int)cfg.llc_domains; i++) {
		if (cm_init(&llcs[i], cfg.llc, cfg.llc_ways, cfg.line, cfg.llc_repl)) {
			fprintf(stderr, "llcsim: bad LLC geometry\n");
			return -1;
		}
		llcs[i].pf_near = (uint32_t)(cfg.llc_pf_near * 1024 + 0.5);
		if (cm_set_decay(&llcs[i], (uint32_t)cfg.llc_decay)) {
			fprintf(stderr, "llcsim: llc_repl decay %lu\n", cfg.llc_decay);
			return -1;
		}
	}
	nvcpus = info->system.max_vcpus;
	if ((int)cfg.llc_domains > nvcpus) {
		fprintf(stderr, "llcsim: llc_domains=%u for %d vCPUs\n", cfg.llc_domains, nvcpus);
		return -1;
	}
	vcpus = calloc((size_t)nvcpus, sizeof(*vcpus));
	if (!vcpus)
		return -1;
	for (i = 0; i < nvcpus; i++) {
		struct vcpu *v = &vcpus[i];

		if (cm_init(&v->l1, cfg.l1, cfg.l1_ways, cfg.line, cfg.repl) ||
		    (cfg.l2 && cm_init(&v->l2, cfg.l2, cfg.l2_ways, cfg.line, cfg.repl))) {
			fprintf(stderr, "llcsim: bad L1/L2 geometry\n");
			return -1;
		}
		v->rng = cfg.seed * 0x9E3779B97F4A7C15ull + (uint64_t)i + 1;
		v->llc = &llcs[(uint64_t)i * cfg.llc_domains / (uint64_t)nvcpus];
		v->ways = CM_ALL_WAYS;
		v->stats = calloc(MAX_TAGS, sizeof(*v->stats));
		v->idle = 1;	/* until it executes its first TB */
		if (!v->stats)
			return -1;
		v->tm.rob = cfg.rob;
		v->tm.mshr = cfg.mshr;
		if (cfg.pf && pf_init(&v->pf, cfg.pf, cfg.pf_streams, cfg.pf_xlat)) {
			fprintf(stderr, "llcsim: bad prefetcher configuration\n");
			return -1;
		}
		if (cfg.dtlb && tlb_init(&v->tlb, cfg.dtlb, cfg.dtlb_ways, cfg.stlb, cfg.stlb_ways,
					 (uint64_t)(cfg.lat_stlb * 100 + 0.5), (uint64_t)(cfg.lat_walk * 100 + 0.5))) {
			fprintf(stderr, "llcsim: bad TLB geometry (entries a multiple of ways, a power of two of sets)\n");
			return -1;
		}
		v->path = (struct acc_path){
			.l1 = &v->l1, .l2 = cfg.l2 ? &v->l2 : NULL, .pf = cfg.pf ? &v->pf : NULL,
			.bw = &bw, .tlb = cfg.dtlb ? &v->tlb : NULL, .rng = &v->rng, .clock = &v->clock,
			.line_shift = v->llc->line_shift,
			.c_l2 = c_l2, .c_llc = c_llc, .c_mem = c_mem, .c_seq = c_seq,
			.c_fill = (uint64_t)(cfg.pf_fill * 100 + 0.5),
			.llc = llc_lookup, .charge = charge_miss, .prefetched = prefetched, .xlated = xlated,
		};
		if (ngrid) {
			unsigned int k;

			v->grid = calloc(ngrid, sizeof(*v->grid));
			v->gstall = calloc((size_t)MAX_TAGS * ngrid, sizeof(*v->gstall));
			if (!v->grid || !v->gstall)
				return -1;
			for (k = 0; k < ngrid; k++) {
				v->grid[k].tm.rob = gridpts[k].rob;
				v->grid[k].tm.mshr = gridpts[k].mshr;
			}
		}
	}
	out = stderr;
	if (cfg.out && !(out = fopen(cfg.out, "w"))) {
		perror(cfg.out);
		return -1;
	}
	fprintf(out, "config l1=%" PRIu64 "/%u l2=%" PRIu64 "/%u llc=%" PRIu64 "/%u"
		" line=%u llc_sets=%u colors=%" PRIu64 " repl=%s llc_repl=%s sim=%s vcpus=%d"
		" cpi=%g cpi_dyn=%g lat_l2=%g lat_llc=%g lat_mem=%g lat_seq=%g sync=%" PRIu64
		" rob=%" PRIu64 " mshr=%u ram_mib=%" PRIu64 " llc_domains=%u pf=%u pf_streams=%u pf_xlat=%u"
		" pf_fill=%g bw_peak=%g bw_umax=%g bw_slot=%" PRIu64 " dtlb=%u/%u stlb=%u/%u lat_stlb=%g lat_walk=%g"
		" llc_pf_near=%g llc_decay=%lu",
		cfg.l1, cfg.l1_ways, cfg.l2, cfg.l2_ways, cfg.llc, cfg.llc_ways,
		cfg.line, llcs[0].sets, cfg.llc / ((uint64_t)cfg.llc_ways * 4096),
		repl_name[cfg.repl], repl_name[cfg.llc_repl], cfg.tagged ? "tagged" : "always",
		nvcpus, cfg.cpi, cfg.cpi_dyn, cfg.lat_l2, cfg.lat_llc, cfg.lat_mem, cfg.lat_seq, cfg.sync / 100,
		cfg.rob, cfg.mshr, ram_size >> 20, cfg.llc_domains, cfg.pf, cfg.pf_streams, cfg.pf_xlat,
		cfg.pf_fill, cfg.bw_peak, cfg.bw_umax, cfg.bw_slot, cfg.dtlb, cfg.dtlb_ways, cfg.stlb, cfg.stlb_ways,
		cfg.lat_stlb, cfg.lat_walk, cfg.llc_pf_near, cfg.llc_decay);
	for (i = 0; i < (int)ngrid; i++)
		fprintf(out, " g%d=%g:%" PRIu64 ":%u", i, gridpts[i].cpi, gridpts[i].rob, gridpts[i].mshr);
	fprintf(out, "\n");
	fflush(out);
	qemu_plugin_register_vcpu_tb_trans_cb(id, vcpu_tb_trans);
	qemu_plugin_register_vcpu_idle_cb(id, vcpu_idle);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
	return 0;
}
