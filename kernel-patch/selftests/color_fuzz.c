// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz the three colour system calls with random arguments (default
 * 100000 calls, or argv[1]) in a child process, then check that the child
 * survived, only documented errnos came back, memory contents are intact
 * and dmesg shows no BUG/WARNING/Oops.  THP is switched to "always" for
 * the run, and a 4 MiB arena of transparent huge pages is bound and
 * migrated in random pieces now and then, so that huge pages are split.
 */
#include "pc_test.h"

#include <limits.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define ARENA	64			/* pages */
#define THP_ARENA	(4UL << 20)		/* bytes, two huge pages */
#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define KADDR	0xffffffff81000000UL

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static unsigned long pick(const unsigned long *v, size_t n)
{
	return v[rnd() % n];
}

static char *arena, *unmapped, *ro, *thp;
static unsigned long *maskbuf;		/* 2 pages, second one PROT_NONE */
static unsigned long *maskend;		/* last long before the guard page */
static long ps;
static unsigned long nr;
/*
 * Colours that hold a whole huge page with room to spare: a piece of a
 * THP migrates as all 512 of its pages once the THP is split (as with
 * mbind()), so a piece is bound to this many colours.  1 up to 256
 * colours in 1 GiB; 2 at 512 colours, 4 at 1,024.
 */
static unsigned long thp_colors;

/*
 * The last call made, with its arguments, so that a failure says which
 * call it was (the fuzz runs in a child: its "#" lines are all that is
 * left of it in the serial log).
 */
static const char *const call_name[] = {
	"set_color_policy", "color_mbind", "get_color_policy", "THP-arena color_mbind"
};

struct call {
	long iter;
	int which;		/* index into call_name[] */
	unsigned long arg[6];	/* in the system call's order */
	unsigned long mask0;	/* the mask's first word, when readable */
	long color;		/* a THP-arena call's first colour (of thp_colors) */
	long r;
	int err;
};

static struct call last;

/* Name an address the fuzz uses; raw hex otherwise. */
static const char *where(unsigned long a, char *buf, size_t len)
{
	unsigned long ar = (unsigned long)arena, th = (unsigned long)thp;

	if (a >= ar && a < ar + ARENA * ps)
		snprintf(buf, len, "arena+%#lx (page %lu)", a - ar, (a - ar) / ps);
	else if (a >= th && a < th + THP_ARENA)
		snprintf(buf, len, "thp+%#lx (page %lu)", a - th, (a - th) / ps);
	else if (a == (unsigned long)maskbuf)
		snprintf(buf, len, "maskbuf");
	else if (a == (unsigned long)maskend)
		snprintf(buf, len, "maskbuf end (runs into the guard page)");
	else if (a == (unsigned long)unmapped)
		snprintf(buf, len, "unmapped");
	else if (a == (unsigned long)ro)
		snprintf(buf, len, "read-only page");
	else
		snprintf(buf, len, "%#lx", a);
	return buf;
}

static void describe(const char *what, const struct call *c)
{
	static const char *const argn[3][6] = {
		{ "mode", "mask", "maxcolor", "flags" },
		{ "start", "len", "mode", "mask", "maxcolor", "flags" },
		{ "mode ptr", "mask", "maxcolor", "addr", "flags" },
	};
	int w = c->which == 3 ? 1 : c->which, k;
	char buf[64];

	printf("# %s: iteration %ld, %s(", what, c->iter, call_name[c->which]);
	for (k = 0; k < 6 && argn[w][k]; k++) {
		unsigned long a = c->arg[k];
		int addr = (w == 1 && (k == 0 || k == 3)) || (w == 0 && k == 1) ||
			   (w == 2 && k != 2 && k != 4);

		printf("%s%s %s", k ? ", " : "", argn[w][k],
		       addr ? where(a, buf, sizeof(buf)) : (snprintf(buf, sizeof(buf),
		       "%#lx", a), buf));
	}
	printf(") = %ld errno %d (%s); ", c->r, c->err,
	       c->err ? strerror(c->err) : "none");
	if (c->which == 3)
		printf("colours %ld-%ld (mod %lu)\n", c->color,
		       c->color + (long)thp_colors - 1, nr);
	else
		printf("mask word 0 %#lx\n", c->mask0);
}

/* Record a call's outcome (and the mask it read, if it could). */
static long record(long r, unsigned long mask)
{
	last.r = r;
	last.err = r ? errno : 0;
	last.mask0 = mask == (unsigned long)maskbuf ? maskbuf[0] : 0;
	return r;
}

/* Which page's contents changed: 0, or the exit code 3 after saying so. */
static int check_contents(const char *name, char *base, size_t npages,
			  char (*want)(size_t), long iter)
{
	size_t j;

	for (j = 0; j < npages; j++) {
		char got = base[j * ps];
		uint64_t pfn = 0;

		if (got == want(j))
			continue;
		pagecolor_pfn(base + j * ps, &pfn);
		printf("# %s page %zu changed (found at iteration %ld): reads %#x, "
		       "wrote %#x; pfn %#llx colour %d\n", name, j, iter,
		       (unsigned char)got, (unsigned char)want(j),
		       (unsigned long long)pfn, pfn ? (int)(pfn % nr) : -1);
		describe("last call", &last);
		return 3;
	}
	return 0;
}

static char arena_byte(size_t i)
{
	return pc_page_byte(i ^ 0x5a);
}

static char thp_byte(size_t i)
{
	return pc_page_byte(i ^ 0xa5);
}

/* vmstat counters that tell a transient migration failure from a bug */
static const char *const mig_stat[] = {
	"pgmigrate_success", "pgmigrate_fail", "thp_migration_fail",
	"thp_split_page", "thp_split_page_failed", "compact_isolated",
	"compact_stall", "pgscan_kswapd",
};
#define NR_MIG_STAT (sizeof(mig_stat) / sizeof(mig_stat[0]))

static void fill_page(size_t i)
{
	arena[i * ps] = arena_byte(i);
}

static void thp_fill(void)
{
	size_t i;

	for (i = 0; i < THP_ARENA / ps; i++)
		thp[i * ps] = thp_byte(i);
}

/* thp_colors colours from @c on (wrapping at nr) */
static pagecolor_set_t thp_set(unsigned long c)
{
	pagecolor_set_t s;
	unsigned long k;

	pagecolor_set_zero(&s);
	for (k = 0; k < thp_colors; k++)
		pagecolor_set_add(&s, (int)((c + k) % nr));
	return s;
}

/*
 * Bind a random piece of the THP arena to thp_colors colours from a
 * random one on, and migrate.
 */
static long thp_mbind(void)
{
	unsigned long first = rnd() % (THP_ARENA / ps);
	unsigned long n = 1 + rnd() % (THP_ARENA / ps - first);
	unsigned long c = rnd() % nr;
	pagecolor_set_t s = thp_set(c);

	/* no more than one colour's share of a small guest holds */
	if (n > 128)
		n = 128;

	last.which = 3;
	last.arg[0] = (unsigned long)thp + first * ps;
	last.arg[1] = n * ps;
	last.arg[2] = 1 + rnd() % 2;
	last.arg[3] = 0;	/* a mask on the stack */
	last.arg[4] = nr;
	last.arg[5] = COLOR_MBIND_MIGRATE;
	last.color = (long)c;
	errno = 0;
	return record(pagecolor_sys_color_mbind(last.arg[0], last.arg[1],
						(int)last.arg[2], s.bits, nr,
						COLOR_MBIND_MIGRATE), 0);
}

/*
 * A THP-arena piece gave EIO: say what moved and what not, and try the
 * same call once more.  Returns 0 when the retry moved everything (the
 * first call met pages busy at that instant), 1 otherwise.
 */
static int thp_eio(const long long *before)
{
	struct call first = last;
	unsigned long npages = first.arg[1] / ps;
	long c = first.color;
	pagecolor_set_t s;
	struct pc_check r;
	long rc;

	describe("THP-arena color_mbind failed", &first);
	pc_vmstats_growth("vmstat during the call", mig_stat, NR_MIG_STAT, before, NULL);
	s = thp_set((unsigned long)c);
	if (!pc_check_range((void *)first.arg[0], npages, &s, &r))
		printf("# after it: %zu of %lu pages outside colours from %ld, %zu absent "
		       "(first outside: page %zu colour %d)\n", r.bad, npages, c,
		       r.absent, r.first_bad_page, r.first_bad_color);
	errno = 0;
	rc = pagecolor_sys_color_mbind(first.arg[0], first.arg[1], (int)first.arg[2],
				       s.bits, PAGE_COLOR_MAX_COLORS, COLOR_MBIND_MIGRATE);
	if (pc_check_range((void *)first.arg[0], npages, &s, &r))
		r.bad = npages;
	printf("# the same call again: rc %ld (%s), %zu of %lu pages outside colours from %ld\n",
	       rc, rc ? strerror(errno) : "ok", r.bad, npages, c);
	last = first;
	return rc || r.bad;
}

static unsigned long rand_mask_ptr(int writable_only)
{
	size_t i, nlong = PAGECOLOR_SET_LONGS;
	unsigned int k = (unsigned int)(rnd() % 10);

	/* random contents: sometimes only valid colours, sometimes anything */
	for (i = 0; i < nlong; i++)
		maskbuf[i] = 0;
	switch (rnd() % 4) {
	case 0:
		break;				/* empty */
	case 1:
		maskbuf[0] = rnd();
		if (nr < PAGECOLOR_BITS_PER_LONG)
			maskbuf[0] &= (1UL << nr) - 1;
		break;
	case 2:
		maskbuf[rnd() % nlong] = rnd();
		break;
	default:
		maskbuf[0] = 1UL << (rnd() % (nr < 64 ? nr : 64));
		break;
	}
	switch (k) {
	case 0: return 0;
	case 1: return KADDR;
	case 2: return (unsigned long)unmapped;
	case 3: return writable_only ? (unsigned long)maskbuf : (unsigned long)ro;
	case 4: return (unsigned long)maskend;	/* runs into the guard page */
	case 5: return (unsigned long)maskbuf + 1;	/* unaligned */
	default: return (unsigned long)maskbuf;
	}
}

static unsigned long rand_maxcolor(void)
{
	const unsigned long v[] = { 0, 1, 2, nr - 1, nr, nr + 1, 63, 64, 65,
				    PAGE_COLOR_MAX_COLORS - 1, PAGE_COLOR_MAX_COLORS,
				    PAGE_COLOR_MAX_COLORS + 1, ULONG_MAX,
				    ULONG_MAX / 2, 1UL << 32 };

	if (rnd() % 8 == 0)
		return rnd();
	return pick(v, sizeof(v) / sizeof(v[0]));
}

static int rand_mode(void)
{
	const unsigned long v[] = { 0, 1, 2, 1, 2, 3, (unsigned long)-1, INT_MAX,
				    (unsigned long)INT_MIN };

	return (int)pick(v, sizeof(v) / sizeof(v[0]));
}

static unsigned int rand_flags(void)
{
	const unsigned long v[] = { 0, 0, COLOR_MBIND_MIGRATE, COLOR_MBIND_MIGRATE,
				    2, 3, 0x80000000UL, 0xffffffffUL };

	return (unsigned int)pick(v, sizeof(v) / sizeof(v[0]));
}

static void rand_range(unsigned long *start, unsigned long *len)
{
	unsigned long a = rnd() % ARENA, n = 1 + rnd() % (ARENA - a);

	switch (rnd() % 12) {
	case 0: *start = 0; *len = ps; return;
	case 1: *start = KADDR; *len = ps; return;
	case 2: *start = (unsigned long)unmapped; *len = ps; return;
	case 3: *start = (unsigned long)arena + a * ps + 1 + rnd() % (ps - 1);
		*len = n * ps; return;
	case 4: *start = (unsigned long)arena + a * ps; *len = -(unsigned long)ps; return;
	case 5: *start = (unsigned long)arena + a * ps; *len = 0; return;
	case 6: *start = (unsigned long)arena + a * ps; *len = n * ps - rnd() % ps; return;
	case 7: *start = (unsigned long)arena; *len = (ARENA + 16) * ps; return;
	default: *start = (unsigned long)arena + a * ps; *len = n * ps; return;
	}
}

static int errno_ok(int e)
{
	return e == EINVAL || e == EFAULT || e == ENOMEM || e == EIO ||
	       e == EBUSY || e == EAGAIN || e == EINTR || e == EPERM;
}

static int fuzz(long iterations)
{
	long i, ok = 0, fail = 0, bad_errno = 0, thp_calls = 0, thp_backed = 0;
	long hist[3] = { 0, 0, 0 };
	size_t j;

	arena = mmap(NULL, ARENA * ps, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unmapped = mmap(NULL, ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	maskbuf = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	thp = pc_huge_area(THP_ARENA);
	if (arena == MAP_FAILED || unmapped == MAP_FAILED || ro == MAP_FAILED ||
	    maskbuf == MAP_FAILED || !thp)
		return 2;
	thp_fill();
	printf("# THP arena: %d of 2 huge pages THP-backed at the start\n",
	       pc_is_thp(thp) + pc_is_thp(thp + PC_HUGE));
	munmap(unmapped, ps);
	mprotect((char *)maskbuf + ps, ps, PROT_NONE);
	maskend = (unsigned long *)((char *)maskbuf + ps) - 1;
	for (j = 0; j < ARENA; j++)
		fill_page(j);

	for (i = 0; i < iterations; i++) {
		unsigned long start, len, mask, maxc;
		int which = (int)(rnd() % 3), mode;
		long r;

		hist[which]++;
		memset(&last, 0, sizeof(last));
		last.iter = i;
		last.which = which;
		/* the arguments in the order the calls take them */
		switch (which) {
		case 0:
			mask = rand_mask_ptr(0);
			maxc = rand_maxcolor();
			last.arg[0] = (unsigned long)rand_mode();
			last.arg[1] = mask;
			last.arg[2] = maxc;
			last.arg[3] = rnd() % 4 ? 0 : rand_flags();
			errno = 0;
			r = pagecolor_sys_set_color_policy_flags((int)last.arg[0],
								 (unsigned long *)mask, maxc,
								 (unsigned int)last.arg[3]);
			break;
		case 1:
			rand_range(&start, &len);
			mask = rand_mask_ptr(0);
			maxc = rand_maxcolor();
			last.arg[0] = start;
			last.arg[1] = len;
			last.arg[2] = (unsigned long)rand_mode();
			last.arg[3] = mask;
			last.arg[4] = maxc;
			last.arg[5] = rand_flags();
			errno = 0;
			r = pagecolor_sys_color_mbind(start, len, (int)last.arg[2],
						      (unsigned long *)mask, maxc,
						      (unsigned int)last.arg[5]);
			break;
		default: {
			const unsigned long mp[] = { 0, KADDR, (unsigned long)unmapped,
						     (unsigned long)ro,
						     (unsigned long)&mode };
			unsigned long mpp = pick(mp, 5);

			mask = rand_mask_ptr(1);
			maxc = rand_maxcolor();
			rand_range(&start, &len);
			last.arg[0] = mpp;
			last.arg[1] = mask;
			last.arg[2] = maxc;
			last.arg[3] = start;
			last.arg[4] = rand_flags();
			errno = 0;
			r = pagecolor_sys_get_color_policy((int *)mpp,
							   (unsigned long *)mask, maxc,
							   start, (unsigned int)last.arg[4]);
			break;
		}
		}
		record(r, mask);
		if (r == 0) {
			ok++;
		} else if (r == -1 && errno_ok(last.err)) {
			fail++;
		} else {
			if (bad_errno < 10)
				describe("undocumented result", &last);
			bad_errno++;
		}
		/* memory contents: after every call, to name the call */
		if (check_contents("arena", arena, ARENA, arena_byte, i))
			return 3;
		/* keep the mapping layout moving: holes, refills, touches */
		if (i % 997 == 0) {
			j = rnd() % ARENA;
			munmap(arena + j * ps, ps);
			mmap(arena + j * ps, ps, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			fill_page(j);
		}
		if (i % 5003 == 0) {
			/* make sure we can still allocate under whatever policy */
			pagecolor_sys_set_color_policy(COLOR_MODE_DEFAULT, NULL, 0);
		}
		/* split huge pages: bind and migrate pieces of them */
		if (i % 211 == 0) {
			long long before[NR_MIG_STAT];

			pc_vmstats(mig_stat, NR_MIG_STAT, before);
			memset(&last, 0, sizeof(last));
			last.iter = i;
			r = thp_mbind();
			/*
			 * A piece of the THP arena is private to this process
			 * and smaller than a colour's share: EIO (pages left
			 * unmoved) is a bug here, e.g. a THP split for the move
			 * counted as a failure (issue 29 item 8).
			 */
			if (r == 0) {
				thp_calls++;
			} else if (r == -1 && last.err == EIO) {
				if (bad_errno < 10 && thp_eio(before))
					bad_errno++;
				else if (bad_errno >= 10)
					bad_errno++;
			} else if (!(r == -1 && errno_ok(last.err))) {
				if (bad_errno < 10)
					describe("undocumented result", &last);
				bad_errno++;
			}
			if (check_contents("THP arena", thp, THP_ARENA / ps, thp_byte, i))
				return 3;
		}
		/* and make new ones: drop the policies and the pages, refault */
		if (i % 4999 == 0) {
			pagecolor_sys_set_color_policy(COLOR_MODE_DEFAULT, NULL, 0);
			pagecolor_sys_color_mbind((unsigned long)thp, THP_ARENA,
						  COLOR_MODE_DEFAULT, NULL, 0, 0);
			madvise(thp, THP_ARENA, MADV_DONTNEED);
			thp_fill();
			thp_backed += pc_is_thp(thp) + pc_is_thp(thp + PC_HUGE);
		}
	}
	pagecolor_sys_set_color_policy(COLOR_MODE_DEFAULT, NULL, 0);
	if (check_contents("THP arena", thp, THP_ARENA / ps, thp_byte, i) ||
	    check_contents("arena", arena, ARENA, arena_byte, i))
		return 3;
	printf("# THP arena: %ld pieces bound and migrated; %ld huge pages "
	       "after the refaults\n", thp_calls, thp_backed);
	printf("# %ld calls (set %ld, mbind %ld, get %ld): %ld succeeded, %ld failed "
	       "with documented errnos, %ld unexpected\n", iterations, hist[0],
	       hist[1], hist[2], ok, fail, bad_errno);
	return bad_errno ? 1 : 0;
}

/*
 * Migrating THP-backed ranges, deterministic (issue 29 item 8): a fresh
 * huge page, private, bound in a piece to colours with room, must move
 * with no EIO: (0) the whole huge page, (1) a piece in its middle, (2) all
 * but its first page after MADV_DONTNEED zapped that one (the head is no
 * longer mapped).  Each case binds @w colours of its own (1 + w * k on),
 * w holding a whole huge page: a piece migrates its whole split THP.
 * Returns how many cases failed; 0 when no THP was made.
 */
static int thp_cases(unsigned long w, int *made)
{
	static const struct { unsigned long first, n; int zap_head; } cs[] = {
		{ 0, 512, 0 }, { 100, 64, 0 }, { 1, 511, 1 },
	};
	int bad = 0;
	size_t k;

	*made = 0;
	for (k = 0; k < sizeof(cs) / sizeof(cs[0]); k++) {
		char *h = pc_huge_area(PC_HUGE);
		pagecolor_set_t s;
		struct pc_check r;
		unsigned long i;
		char list[16];
		long rc;

		if (!h)
			return bad + 1;
		for (i = 0; i < PC_HUGE / ps; i++)
			h[i * ps] = pc_page_byte(i);
		if (!pc_is_thp(h)) {
			munmap(h, PC_HUGE);
			continue;
		}
		(*made)++;
		if (cs[k].zap_head)
			madvise(h, ps, MADV_DONTNEED);
		snprintf(list, sizeof(list), "%lu-%lu", 1 + w * k, w + w * k);
		s = pc_set(list);
		errno = 0;
		rc = pagecolor_sys_color_mbind((unsigned long)h + cs[k].first * ps,
					       cs[k].n * ps, COLOR_MODE_BIND, s.bits,
					       PAGE_COLOR_MAX_COLORS, COLOR_MBIND_MIGRATE);
		if (pc_check_range(h + cs[k].first * ps, cs[k].n, &s, &r))
			r.bad = r.absent = cs[k].n;
		for (i = cs[k].zap_head; i < PC_HUGE / ps; i++)
			if (h[i * ps] != pc_page_byte(i))
				r.bad++;
		printf("# THP case %zu (pages %lu-%lu%s): rc %ld (%s), %zu of %lu pages "
		       "outside colours %s or changed\n", k, cs[k].first,
		       cs[k].first + cs[k].n - 1, cs[k].zap_head ? ", head zapped" : "",
		       rc, rc ? strerror(errno) : "ok", r.bad + r.absent, cs[k].n, list);
		if (rc || r.bad || r.absent)
			bad++;
		munmap(h, PC_HUGE);
	}
	return bad;
}

/*
 * A range across the boundary of two huge pages, bound to one colour
 * with COLOR_MBIND_MIGRATE: only its pages may move.  Moving every page
 * of both huge pages (1,024) into the colour overflows a colour's share
 * of a small guest (EIO), and moves pages the policy does not cover.
 * Returns 1 when it failed, 0 when it passed or no THP was made (*made 0).
 */
static int thp_straddle(int *made)
{
	const unsigned long first = 480, n = 64, hp = PC_HUGE / ps;
	char *h = pc_huge_area(2 * PC_HUGE);
	struct pc_check in, out_lo, out_hi;
	unsigned long i, changed = 0, c = 7 % nr;
	size_t moved_out;
	pagecolor_set_t s;
	char list[16];
	long rc;

	*made = 0;
	if (!h)
		return 1;
	for (i = 0; i < 2 * hp; i++)
		h[i * ps] = pc_page_byte(i * 3);
	if (!pc_is_thp(h) || !pc_is_thp(h + PC_HUGE)) {
		munmap(h, 2 * PC_HUGE);
		return 0;
	}
	*made = 1;
	snprintf(list, sizeof(list), "%lu", c);
	s = pc_set(list);
	errno = 0;
	rc = pagecolor_sys_color_mbind((unsigned long)h + first * ps, n * ps,
				       COLOR_MODE_BIND, s.bits, PAGE_COLOR_MAX_COLORS,
				       COLOR_MBIND_MIGRATE);
	if (pc_check_range(h + first * ps, n, &s, &in))
		in.bad = n;
	/* pages of the two huge pages outside the range now on colour c */
	if (pc_check_range(h, first, &s, &out_lo) ||
	    pc_check_range(h + (first + n) * ps, 2 * hp - first - n, &s, &out_hi)) {
		munmap(h, 2 * PC_HUGE);
		return 1;
	}
	moved_out = (out_lo.pages - out_lo.bad - out_lo.absent) +
		    (out_hi.pages - out_hi.bad - out_hi.absent);
	for (i = 0; i < 2 * hp; i++)
		changed += h[i * ps] != pc_page_byte(i * 3);
	printf("# THP straddle (pages %lu-%lu of two huge pages, colour %lu): rc %ld "
	       "(%s), %zu of %lu in the range outside the colour; %zu of %lu pages "
	       "outside the range on the colour (chance: about %lu); %lu changed\n",
	       first, first + n - 1, c, rc, rc ? strerror(errno) : "ok",
	       in.bad + in.absent, n, moved_out, 2 * hp - n, (2 * hp - n) / nr, changed);
	munmap(h, 2 * PC_HUGE);
	return rc || in.bad || in.absent || changed ||
	       moved_out > 2 * (2 * hp - n) / nr + 16;
}

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 100000;
	int st, trouble;
	pid_t pid;

	pc_init(5);
	ps = pc_page_size;
	nr = (unsigned long)pc_nr_colors;
	if (argc > 2)
		rng = strtoull(argv[2], NULL, 0);
	tap_diag("%ld iterations, seed 0x%llx", iterations, (unsigned long long)rng);
	trouble = pc_dmesg_trouble();
	tap_ok(trouble == 0, "dmesg clean before fuzzing");
	if (pc_write_file(THP_ENABLED, "always"))
		tap_diag("%s: %s", THP_ENABLED, strerror(errno));
	/*
	 * A piece of a THP migrates all 512 pages of it (split for the move,
	 * as with mbind()): the colours a piece is bound to must hold them.
	 */
	thp_colors = (unsigned long)pc_colors_holding(PC_HUGE / ps);
	{
		/* the deterministic cases: two colours at least, 1 + 3w in all */
		unsigned long w = thp_colors > 2 ? thp_colors : 2;
		int made, bad, made2;

		tap_diag("a colour's share %zu pages: THP cases bind %lu colours each, "
			 "the fuzz's THP pieces %lu", pc_color_share(), w, thp_colors);
		if (1 + 3 * w > nr) {
			tap_skip("THP-backed ranges migrate without EIO: the three cases "
				 "need %lu colours of %lu pages each (a colour's share), "
				 "there are %lu", 1 + 3 * w, (unsigned long)pc_color_share(), nr);
		} else {
			bad = thp_cases(w, &made);
			bad += thp_straddle(&made2);
			tap_ok(made && made2 && !bad, "THP-backed ranges migrate without EIO, "
			       "only their own pages: %d of %d cases failed (THP made in %d)",
			       bad, 4, made + made2);
		}
	}
	pid = fork();
	if (pid == 0)
		_exit(fuzz(iterations));
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		tap_ok(0, "fuzz child ran");
		return tap_finish();
	}
	pc_write_file(THP_ENABLED, "madvise");
	tap_ok(WIFEXITED(st), "fuzz child survived %ld calls (status 0x%x)", iterations, st);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "only documented errnos, memory contents intact");
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg after fuzzing");
	return tap_finish();
}
