// SPDX-License-Identifier: GPL-2.0
/*
 * Coloured anonymous memory and swap (issue 29 item 10).
 *
 * Swap is a second RAM disk (/dev/ram1, test.config has two), made and
 * switched on by the test and switched off at the end.
 *
 * 1. Swap-in keeps the colours: a private anonymous range bound to one
 *    colour is touched, pushed out to swap with MADV_PAGEOUT (pagemap
 *    must show every page swapped), and read back: every page must hold
 *    what was written and lie on the bound colour.  Swap-in allocates
 *    through the VMA's colour policy, as the first fault did.  Then the
 *    same with a shared anonymous range (shmem, as PostgreSQL's shared
 *    buffers): shmem swaps in through a pseudo-VMA, which must take the
 *    faulting VMA's colours; its pages in swap are counted by smaps'
 *    Swap: (pagemap shows no swap entry for shmem).
 *
 * 2. The reclaim aimed at a colour never swaps: an uncoloured bystander
 *    holds anonymous memory (a quarter of memory, so a quarter of every
 *    colour's frames), page cache fills the rest, and a process binds
 *    a third of colour 0's share to colour 0 (at most half of what the
 *    bystander leaves there), more than free memory gives the colour.
 *    It runs first (see main()).  The allocator must reclaim where colour 0 is; the aimed
 *    reclaim takes page cache only (page_coloring.rst), so none of the
 *    bystander's pages on colour 0 may go to swap, and the swap-out
 *    counter (pswpout) must not move while cache is there to take.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/swap.h>
#include <sys/wait.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif

#define SWAPDEV		"/dev/ram1"
#define SWAP_KB		"131072"	/* 128 MiB of swap */
#define CACHEDEV	"/dev/ram0"
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)
#define PM_PFN		((1ULL << 55) - 1)
#define IDLE_MS		60000
#define EAT_PAGES	4096	/* 16 MiB: more than the per-cpu lists hold */

/* pagemap entries of npages at addr in process pid (0: self); 0 or -1 */
static int pagemap(pid_t pid, uintptr_t addr, size_t npages, uint64_t *e)
{
	char path[64];
	ssize_t want = (ssize_t)(npages * sizeof(*e));
	int fd;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/pagemap");
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	if (pread(fd, e, want, (off_t)(addr / pc_page_size * sizeof(*e))) != want) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int color_of(uint64_t e)
{
	return (e & PM_PRESENT) ? (int)((e & PM_PFN) % (uint64_t)pc_nr_colors) : -1;
}

static char pattern(size_t i)
{
	return pc_page_byte(i * 7 + 3);
}

/* Pages of @p (n of them, @shared or private) in swap; -1 on error. */
static long swapped_pages(char *p, size_t n, int shared, uint64_t *e)
{
	long swapped = 0;
	size_t i;

	if (shared) {
		long kb = pc_smaps_value(p, "Swap");

		return kb < 0 ? -1 : kb * 1024 / pc_page_size;
	}
	if (pagemap(0, (uintptr_t)p, n, e))
		return -1;
	for (i = 0; i < n; i++)
		swapped += !!(e[i] & PM_SWAP);
	return swapped;
}

/*
 * Part 1: bind, touch, page out, touch back; every page on @color.  @shared:
 * a MAP_SHARED anonymous range (shmem) instead of a private one.
 */
static void swapin_keeps_colour(int color, size_t n, int shared)
{
	const char *kind = shared ? "shmem swap-in" : "swap-in";
	uint64_t *e = calloc(n, sizeof(*e));
	size_t i, outside = 0, wrong = 0, absent = 0, off0 = 0;
	long long in0 = pc_vmstat("pswpin"), out0 = pc_vmstat("pswpout"), in1;
	long swapped = 0;
	pagecolor_set_t s;
	char *p, *eat, list[16];
	int tries;

	/*
	 * One CPU: a page still in another CPU's LRU batch is not isolated by
	 * MADV_PAGEOUT (which drains only this CPU's), however often it asks.
	 */
	pc_run_on(0);
	snprintf(list, sizeof(list), "%d", color);
	s = pc_set(list);
	p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		 (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
	if (!e || p == MAP_FAILED ||
	    pagecolor_sys_color_mbind((unsigned long)p, n * pc_page_size,
				      COLOR_MODE_BIND, s.bits,
				      PAGE_COLOR_MAX_COLORS, 0)) {
		tap_diag("mmap/color_mbind: %s", strerror(errno));
		tap_ok(0, "%s: setup", kind);
		tap_ok(0, "%s: every page back on its colour", kind);
		return;
	}
	for (i = 0; i < n; i++)
		p[i * pc_page_size] = pattern(i);
	if (pagemap(0, (uintptr_t)p, n, e) == 0)
		for (i = 0; i < n; i++)
			off0 += color_of(e[i]) != color;
	/*
	 * Pages still on a CPU's LRU batch are not isolated by MADV_PAGEOUT:
	 * ask again until they are all in swap.
	 */
	for (tries = 0; tries < 20; tries++) {
		madvise(p, n * pc_page_size, MADV_PAGEOUT);
		swapped = swapped_pages(p, n, shared, e);
		if (swapped == (long)n)
			break;
		usleep(100000);
	}
	/*
	 * The frames paging out freed sit on the per-cpu lists, which hand
	 * them out again last in, first out: swap-in would get the very same
	 * frames back, of the right colour whatever it asked for.  Take them
	 * (and more) with uncoloured memory first.
	 */
	eat = mmap(NULL, EAT_PAGES * pc_page_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (eat != MAP_FAILED)
		for (i = 0; i < EAT_PAGES; i++)
			eat[i * pc_page_size] = 1;
	tap_diag("%s: %zu pages bound to colour %d (%zu outside it before "
		 "paging out); MADV_PAGEOUT %d times: %ld swapped, pswpout +%lld; "
		 "%d uncoloured pages touched since", kind, n, color, off0, tries + 1,
		 swapped, pc_vmstat("pswpout") - out0, eat == MAP_FAILED ? 0 : EAT_PAGES);
	tap_ok(off0 == 0 && swapped == (long)n,
	       "%s: all %zu pages of colour %d went to swap (%ld swapped)",
	       kind, n, color, swapped);
	in1 = pc_vmstat("pswpin");
	for (i = 0; i < n; i++)
		wrong += p[i * pc_page_size] != pattern(i);
	in1 = pc_vmstat("pswpin") - in1;
	if (pagemap(0, (uintptr_t)p, n, e) == 0) {
		for (i = 0; i < n; i++) {
			int c = color_of(e[i]);

			if (c < 0)
				absent++;
			else if (c != color)
				outside++;
		}
	} else {
		absent = n;
	}
	tap_diag("%s: read back, pswpin +%lld (+%lld since paging out): %zu changed, "
		 "%zu absent, %zu of %zu outside colour %d", kind, in1,
		 pc_vmstat("pswpin") - in0, wrong, absent, outside, n, color);
	/* pswpin: the pages really came back from swap, not from the swap cache */
	tap_ok(swapped == (long)n && in1 >= (long long)n && !wrong && !absent && !outside,
	       "%s: every page back from swap (pswpin +%lld) with its contents on "
	       "colour %d (%zu of %zu outside, %zu changed)", kind, in1, color,
	       outside, n, wrong);
	munmap(p, n * pc_page_size);
	if (eat != MAP_FAILED)
		munmap(eat, EAT_PAGES * pc_page_size);
	free(e);
}

/*
 * Of the bystander's pages marked in @was, those still resident (-1 on
 * error), of them those still on colour 0 in @on_c0 (compaction may move a
 * page elsewhere: that is migration, not swap); those in swap go to
 * @swapped, all its pages in swap to @all_swapped.
 */
static long still_resident(pid_t pid, uintptr_t addr, size_t n, uint64_t *e,
			   const unsigned char *was, long *on_c0, long *swapped,
			   long *all_swapped)
{
	long r = 0;
	size_t i;

	if (pagemap(pid, addr, n, e))
		return -1;
	*on_c0 = *swapped = *all_swapped = 0;
	for (i = 0; i < n; i++) {
		*all_swapped += !!(e[i] & PM_SWAP);
		if (!was[i])
			continue;
		r += !!(e[i] & PM_PRESENT);
		*on_c0 += color_of(e[i]) == 0;
		*swapped += !!(e[i] & PM_SWAP);
	}
	return r;
}

/* Part 2: the reclaim aimed at colour 0 takes cache, never anonymous memory. */
static void aimed_reclaim_never_swaps(void)
{
	long long total = pc_meminfo_kb("MemTotal") * 1024, fill, out0, out1;
	size_t per = (size_t)(sysconf(_SC_PHYS_PAGES) / pc_nr_colors);
	size_t nb = (size_t)(total / 4 / pc_page_size), want = per / 3, i, free_c0;
	unsigned long long rc0 = 0, rc1 = 0;
	long c0_before, c0_after, on0 = -1, on1 = -1, swapped = -1, bad = -1, sw0 = -1, sw1 = -1;
	int up[2], down[2], fd, st = -1, idle;
	unsigned char *was = calloc(nb, 1);
	uint64_t *e = calloc(nb, sizeof(*e));
	pid_t by, at;
	char *addr = NULL, c;

	if (!was || !e || pipe(up) || pipe(down)) {
		tap_ok(0, "aimed reclaim: setup");
		return;
	}
	by = fork();
	if (by == 0) {
		char *b = mmap(NULL, nb * pc_page_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		close(up[0]);
		close(down[1]);
		if (b == MAP_FAILED)
			_exit(20);
		for (i = 0; i < nb; i++)
			b[i * pc_page_size] = 1;
		if (write(up[1], &b, sizeof(b)) != sizeof(b))
			_exit(21);
		while (read(down[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	if (by < 0 || read(up[0], &addr, sizeof(addr)) != sizeof(addr)) {
		tap_ok(0, "aimed reclaim: the bystander touched its pages");
		return;
	}
	fd = open(CACHEDEV, O_RDONLY);
	fill = fd < 0 ? 0 : pc_read_range(fd, 0, total);
	idle = pc_wait_kswapd_idle(IDLE_MS);
	pc_wait_parked(1, IDLE_MS);
	if (pagemap(by, (uintptr_t)addr, nb, e) == 0)
		for (i = 0; i < nb; i++)
			was[i] = color_of(e[i]) == 0;
	c0_before = still_resident(by, (uintptr_t)addr, nb, e, was, &on0, &swapped, &sw0);
	/*
	 * Colour 0 must have room for the binder beside the bystander's pages
	 * there, which the aimed reclaim may not take: at 1,024 colours a
	 * colour has 256 frames of a 1 GiB guest, and the bystander may hold
	 * most of them.  Bind half of what it leaves, at most a third.
	 */
	if (c0_before > 0 && (size_t)c0_before < per && (per - (size_t)c0_before) / 2 < want)
		want = (per - (size_t)c0_before) / 2;
	free_c0 = (size_t)(pc_memfree_pages() / pc_nr_colors);
	out0 = pc_vmstat("pswpout");
	pagecolor_read_counter("reclaimed", &rc0);
	tap_diag("aimed reclaim: bystander %zu anonymous pages, %ld on colour 0 "
		 "(%ld of all in swap already); %lld MiB of cache read; %zu free pages "
		 "per colour; binding %zu pages to colour 0", nb, c0_before, sw0,
		 fill >> 20, free_c0, want);

	at = fork();
	if (at == 0) {
		char *p = pc_child_bound_touch("0", want, 22);
		pagecolor_set_t s0 = pc_set("0");

		_exit(pc_range_ok(p, want, &s0, "binder") ? 0 : 23);
	}
	if (at > 0 && waitpid(at, &st, 0) != at)
		st = -1;
	out1 = pc_vmstat("pswpout");
	pagecolor_read_counter("reclaimed", &rc1);
	c0_after = still_resident(by, (uintptr_t)addr, nb, e, was, &on1, &swapped, &sw1);
	bad = c0_before - c0_after;
	close(down[1]);
	waitpid(by, NULL, 0);
	close(fd);
	tap_diag("aimed reclaim: binder exit status 0x%x; reclaimed %llu -> %llu; "
		 "bystander's colour-0 pages resident %ld -> %ld (on colour 0 %ld -> %ld, "
		 "the others migrated; %ld in swap; of all its pages %ld -> %ld in swap); "
		 "pswpout %lld -> %lld", st, rc0, rc1, c0_before, c0_after, on0, on1,
		 swapped, sw0, sw1, out0, out1);
	tap_ok(idle == 0 && fill > total / 2 && free_c0 < want / 2 && c0_before > 0,
	       "aimed reclaim: premise (kswapd asleep, %lld MiB cached, colour 0 short: "
	       "%zu < %zu free, bystander has %ld pages there)", fill >> 20, free_c0,
	       want / 2, c0_before);
	tap_ok(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && rc1 > rc0,
	       "aimed reclaim: the binder got its %zu pages of colour 0 by reclaim "
	       "(exit %d, reclaimed +%llu)", want,
	       st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1, rc1 - rc0);
	tap_ok(bad == 0 && swapped == 0 && out1 == out0,
	       "aimed reclaim: no swap-out: the bystander kept its %ld colour-0 pages "
	       "(lost %ld, %ld in swap), pswpout +%lld", c0_before, bad, swapped,
	       out1 - out0);
	free(was);
	free(e);
}

int main(void)
{
	int trouble, swap_on;
	size_t per;

	pc_init(10);
	trouble = pc_dmesg_trouble();
	per = (size_t)(sysconf(_SC_PHYS_PAGES) / pc_nr_colors);
	swap_on = system("mkswap " SWAPDEV " " SWAP_KB " >/dev/null") == 0 &&
		  swapon(SWAPDEV, 0) == 0;
	if (!swap_on)
		tap_diag("swap on %s: %s (test.config: CONFIG_SWAP, "
			 "BLK_DEV_RAM_COUNT >= 2)", SWAPDEV, strerror(errno));
	tap_ok(swap_on, "swap on %s", SWAPDEV);
	if (!swap_on)
		return tap_finish();
	pc_settle();

	/*
	 * The aimed reclaim first: the swap-ins' refills give back pages of
	 * every colour, one of colour 0 in each block they split (1,024 pages
	 * at 1,024 colours), which the bystander's faults then take.
	 */
	aimed_reclaim_never_swaps();
	/* a quarter of a colour's share, at most 1,024 pages */
	swapin_keeps_colour(5 % pc_nr_colors, per / 4 < 1024 ? per / 4 : 1024, 0);
	swapin_keeps_colour(6 % pc_nr_colors, per / 4 < 1024 ? per / 4 : 1024, 1);

	errno = 0;
	tap_ok(swapoff(SWAPDEV) == 0, "swapoff %s (%s)", SWAPDEV,
	       errno ? strerror(errno) : "ok");
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg");
	pc_wait_parked(0, 10000);
	return tap_finish();
}
