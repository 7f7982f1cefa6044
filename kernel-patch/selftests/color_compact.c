// SPDX-License-Identifier: GPL-2.0
/*
 * Compaction and transparent huge pages beside pages of one colour
 * (issue 29 item 5).
 *
 * An unprivileged child (uid 65534, vm.page_color_restrict 0) bound to
 * colour 0 touches npages pages (half of colour 0's share of memory, at
 * most 512; the kernel and the bystanders below use frames of colour 0
 * too); then the parked pool is drained, so only its own pages are left
 * in use by the colour allocator.
 *
 * (a) Pinned pageblocks, a measurement.  A pageblock holding a page of a
 *     colour policy is lost to huge pages while the page lives (compaction
 *     moves it only to another frame of its colour, (b)).  A pageblock of 512 frames
 *     holds 512 / nr_colors frames of a colour (at least one), so npages
 *     pages of one colour need at least npages / (512 / nr_colors)
 *     pageblocks: the minimum, which no placement can beat (at 256
 *     colours, 2 MiB of one colour span 512 MiB).  The pageblocks the
 *     child's frames lie in (read from its pagemap), the free order-9
 *     blocks, and the huge pages a bystander gets (MADV_HUGEPAGE, defrag
 *     "madvise", so direct compaction runs) before the child and while it
 *     holds its pages are printed.  Nothing packs coloured pages, so how
 *     far above the minimum they lie depends on what earlier programs left
 *     fragmented (16 colours: 17-21 pageblocks alone, 34 after the whole
 *     suite): printed, not bounded; the check is that the count is not
 *     below the minimum, i.e. that the frames read are of one colour.
 * (b) Compaction moves pages of a colour policy within their colour.
 *     This process, the filler, touches all free memory of the zones it
 *     can take from but 64 MiB above the high watermark (watermark boosts
 *     off meanwhile) in 4 KiB pages, reads where they lie, and gives back
 *     those in the lowest quarter of its frames; a second child, bound to
 *     colour 1 (the first child holds colour 0's frames), touches NMOVE
 *     pages, whose refill blocks come from that quarter.  The filler then
 *     gives back two pages in three of the rest, which leaves free frames
 *     of every colour in partly used pageblocks above the child's, for
 *     compaction's free scanner, and few pages below them for its
 *     migration scanner: the two meet above the child's pages.
 *     vm.compact_memory runs twice.  At up to MOVES_MAX_COLORS colours,
 *     at least an eighth of the child's pages must then lie on another
 *     frame (a compaction that leaves coloured pages in place moves none;
 *     the first one moved 21 to 64 of 64 at 16 to 256 colours in a 1 GiB
 *     guest, 2026-12-07; beyond, how many is printed), and at any number
 *     every one on a frame of colour 1 after each: a moved page that lost
 *     its policy's mark would move to a frame of any colour.  Where the
 *     pages lay is printed.
 * (c) A full compaction gives the pool back.  The child touches an
 *     eighth of the colour's share more (at most 512; as many again in
 *     (d)), which parks pages again; vm.compact_memory asks for every
 *     block there is, so at most 1/10 of them may stay parked (kept, they
 *     cost a bystander's compaction a third of its huge-page blocks in
 *     color_pressure).  Draining on a proactive run (d) would only free
 *     pages that the next coloured fault splits a new block for.
 * (d) The same for proactive compaction.  The child touches as many more
 *     pages (the pool refills), a bystander fragments free memory (it
 *     touches 3/4 of it and frees every other page), and
 *     vm.compaction_proactiveness is set to 100 for 3 s (kcompactd looks
 *     every 500 ms; writing the sysctl wakes it): at least 9/10 of the
 *     parked pages must still be parked.  Proactive compaction runs when
 *     the node's fragmentation score passes 15 at proactiveness 100: the
 *     premise is that the score (in a guest of one zone, the share of
 *     free pages outside free blocks of order 9, from /proc/buddyinfo)
 *     is over 15.  A run that finds the zone compacted enough ends
 *     without scanning, so kcompactd's scanner counters are only printed.
 * (e) A bystander keeps its huge pages beside coloured pages that
 *     compaction can pack (issue 51 item 2).  With the first child gone, a
 *     bystander's huge pages are counted; then a child bound to colour 1
 *     touches up to SPREAD_PAGES pages (half its colour's share at most),
 *     keeps the first one in each pageblock and gives back the rest, so
 *     that its pages pin as many pageblocks as they can.  After
 *     vm.compact_memory twice, the pages must lie in at most half way from
 *     the pageblocks they took to their minimum (2026-12-07, one boot each:
 *     132 -> 5 of minimum 5 at 16 colours, 252 -> 33 of 32 at 64, 252 ->
 *     127 of 126 at 256; patches 1-12 left them in place, and patch 13
 *     before it drained the per-cpu lists on a miss left 249 of 252 at 64),
 *     and a bystander must get at least 90% of the huge pages it got
 *     without them (patches 1-12 at 16 colours: 357 of 442).  The second
 *     only where the pages' own minimum of pageblocks is at most 1/20 of
 *     the huge pages: at 256 colours a pageblock has 2 frames of a colour,
 *     and 252 pages need 126 of the guest's ~440 huge pages wherever they
 *     lie, so there the counts are printed.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#define NOBODY		65534
#define NPAGES_MAX	512
#define BLOCK_PAGES	512	/* x86-64 pageblock: order 9, a PMD */
#define RESTRICT	"/proc/sys/vm/page_color_restrict"
#define PROACTIVE	"/proc/sys/vm/compaction_proactiveness"
#define COMPACT		"/proc/sys/vm/compact_memory"
#define BOOST_FACTOR	"/proc/sys/vm/watermark_boost_factor"

static long long read_ll(const char *path)
{
	char buf[64];
	long long v;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * A child: uid 65534, bound to @colors, with a mapping of @total pages; on
 * each count of pages read from @cmd it touches that many more and answers
 * with the mapping's address (0 when it could not).
 */
static void child(int cmd, int ans, size_t total, const char *colors)
{
	pagecolor_set_t set = pc_set(colors);
	uintptr_t addr = 0;
	size_t done = 0, j, n;
	char *p;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		_exit(20);
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (pagecolor_set_policy(COLOR_MODE_BIND, &set))
		_exit(21);
	p = mmap(NULL, total * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p != MAP_FAILED)
		addr = (uintptr_t)p;
	while (read(cmd, &n, sizeof(n)) == sizeof(n)) {
		if (addr && done + n <= total) {
			for (j = 0; j < n; j++)
				p[(done + j) * pc_page_size] = 1;
			done += n;
		} else {
			addr = 0;
		}
		if (write(ans, &addr, sizeof(addr)) != sizeof(addr))
			_exit(22);
	}
	_exit(0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Distinct pageblocks of @n frames (sorts them). */
static long distinct_blocks(uint64_t *pfns, size_t n)
{
	long blocks = 0;
	size_t i;

	qsort(pfns, n, sizeof(*pfns), cmp_u64);
	for (i = 0; i < n; i++)
		if (!i || pfns[i] / BLOCK_PAGES != pfns[i - 1] / BLOCK_PAGES)
			blocks++;
	return blocks;
}

/* Distinct pageblocks of @n frames; -1 when one is absent or off colour 0. */
static long pageblocks(uint64_t *pfns, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!pfns[i] || pagecolor_pfn_color(pfns[i], pc_nr_colors) != 0)
			return -1;
	return distinct_blocks(pfns, n);
}

/*
 * Run vm.compact_memory, then read the frames of @pid's @n pages at @addr
 * again: how many lie on another frame than in @pfns (which gets the new
 * ones), and in *@off how many are absent or off @color.  -1 when they
 * cannot be read.
 */
static long compact_moved(pid_t pid, uintptr_t addr, uint64_t *pfns, size_t n,
			  int color, long *off)
{
	uint64_t *now = calloc(n, sizeof(*now));
	long moved = 0;
	size_t i;

	*off = -1;
	pc_write_file(COMPACT, "1");
	if (!now || !addr || pagecolor_pid_pfns(pid, addr, n, now)) {
		free(now);
		return -1;
	}
	*off = 0;
	for (i = 0; i < n; i++) {
		if (now[i] != pfns[i])
			moved++;
		if (!now[i] || pagecolor_pfn_color(now[i], pc_nr_colors) != color)
			(*off)++;
	}
	memcpy(pfns, now, n * sizeof(*pfns));
	free(now);
	return moved;
}

/*
 * Huge pages a bystander gets with direct compaction, in a child process,
 * until the first fault that gets none, in free memory but 96 MiB: where
 * every fault got one, a bystander of 1 GiB (pc_eat_large_blocks()) took
 * all memory and the OOM killer ended it before it could answer.
 */
static long bystander_thp(void)
{
	int fd[2], st;
	long n = -1;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		long got;

		size_t len = (size_t)pc_memfree_pages() * pc_page_size;
		char *h;

		close(fd[0]);
		len = len > (96UL << 20) ? (len - (96UL << 20)) & ~(PC_HUGE - 1) : 0;
		h = len ? pc_huge_area(len) : NULL;
		got = h ? (long)pc_take_huge(h, len, NULL, 1) : 0;
		_exit(write(fd[1], &got, sizeof(got)) == sizeof(got) ? 0 : 1);
	}
	close(fd[1]);
	if (pid < 0 || read(fd[0], &n, sizeof(n)) != sizeof(n))
		n = -1;
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	return n;
}

/*
 * Touch 3/4 of free memory and free every other page: free memory
 * in order-0 holes, which raises the fragmentation score proactive
 * compaction looks at.  The holes stay until the caller unmaps *@len.
 */
static char *fragment(size_t *len)
{
	size_t n = (size_t)pc_memfree_pages() * 3 / 4, i;
	char *p;

	*len = n * pc_page_size;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	pc_touch(p, n);
	for (i = 0; i < n; i += 2)
		madvise(p + i * pc_page_size, pc_page_size, MADV_DONTNEED);
	return p;
}

/* Have the child touch @n more pages: its mapping's address, or 0. */
static uintptr_t ask(int cmd, int ans, size_t n)
{
	uintptr_t addr = 0;

	if (write(cmd, &n, sizeof(n)) != sizeof(n) ||
	    read(ans, &addr, sizeof(addr)) != sizeof(addr))
		return 0;
	return addr;
}

/*
 * Up to this many colours (b) checks how many pages moved.  At 1,024 the
 * child has 16 pages, and after the whole list of programs 1, 5, 10 and 11
 * of them moved in four boots (2026-12-07; 16 of 16 alone): too few and too
 * varied for a check that must not fail by chance, so it is printed only.
 */
#define MOVES_MAX_COLORS	256

/* Pages the child of (b) touches: 64, fewer where they span over 64 MiB. */
#define NMOVE		(pc_nr_colors <= 256 ? 64 : 16384 / pc_nr_colors)

/* Pages the child of (e) touches, at most: 16 MiB. */
#define SPREAD_PAGES	4096

/*
 * Give back the filler's pages below frame @limit; with @thirds, those
 * above it instead, two in three (every other could free frames of one
 * parity only).
 */
static void thin_out(char *fill, const uint64_t *pfns, long n, uint64_t limit,
		     bool thirds)
{
	long i;

	for (i = 0; i < n; i++)
		if (pfns[i] && (thirds ? pfns[i] >= limit && i % 3 : pfns[i] < limit))
			madvise(fill + (size_t)i * pc_page_size, pc_page_size,
				MADV_DONTNEED);
}

/* (b): see the top of the file. */
static void moves_within_colour(void)
{
	long moved[2] = { -1, -1 }, off[2] = { -1, -1 }, nfill, i;
	uint64_t lo = UINT64_MAX, hi = 0, top = 0, *fill_pfns = NULL;
	uint64_t *pfns = calloc(NMOVE, sizeof(*pfns));
	int cmd[2], ans[2], st, nmove = NMOVE;
	uintptr_t addr = 0;
	char *fill = NULL, boost_factor[32] = "";
	long margin;
	pid_t pid = -1;

	/*
	 * The fill leaves 64 MiB above the high watermark free in the zones it
	 * can take from, with watermark boosts off: a boost raises min by up
	 * to 1.5 times the high watermark, and MemFree counts ZONE_DMA, which
	 * user pages never get.  With 64 MiB of MemFree left, 6.12's fill was
	 * OOM-killed under load.
	 */
	pc_read_line(BOOST_FACTOR, boost_factor, sizeof(boost_factor));
	pc_write_file(BOOST_FACTOR, "0");
	pc_wait_kswapd_idle(5000);
	margin = (64L << 20) / (long)pc_page_size;
	nfill = (long)pc_free_above("high") - margin;
	if (pfns && nfill > 0)
		fill_pfns = calloc(nfill, sizeof(*fill_pfns));
	if (fill_pfns) {
		fill = mmap(NULL, nfill * pc_page_size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (fill == MAP_FAILED)
			fill = NULL;
	}
	if (fill) {
		/* 4 KiB pages, and none shared with the child after fork() */
		madvise(fill, nfill * pc_page_size, MADV_NOHUGEPAGE);
		madvise(fill, nfill * pc_page_size, MADV_DONTFORK);
		pc_touch(fill, nfill);
		if (pagecolor_pid_pfns(getpid(), (uintptr_t)fill, nfill, fill_pfns)) {
			munmap(fill, nfill * pc_page_size);
			fill = NULL;
		}
	}
	if (fill && !pipe(cmd) && !pipe(ans)) {
		for (i = 0; i < nfill; i++)
			top = fill_pfns[i] > top ? fill_pfns[i] : top;
		/* the low quarter free: the child's refill blocks come from it */
		thin_out(fill, fill_pfns, nfill, top / 4, false);
		pid = fork();
		if (pid == 0) {
			close(cmd[1]);
			close(ans[0]);
			child(cmd[0], ans[1], nmove, "1");
		}
		close(cmd[0]);
		close(ans[1]);
		if (pid > 0)
			addr = ask(cmd[1], ans[0], nmove);
	}
	if (addr && !pagecolor_pid_pfns(pid, addr, nmove, pfns)) {
		for (i = 0; i < nmove; i++) {
			lo = pfns[i] < lo ? pfns[i] : lo;
			hi = pfns[i] > hi ? pfns[i] : hi;
		}
		thin_out(fill, fill_pfns, nfill, top / 4, true);
		moved[0] = compact_moved(pid, addr, pfns, nmove, 1, &off[0]);
		moved[1] = compact_moved(pid, addr, pfns, nmove, 1, &off[1]);
	}
	tap_diag("(b) %d pages of colour 1 at pfns %llu-%llu, the filler's %ld pages below "
		 "pfn %llu (%ld pages left above high); vm.compact_memory moved %ld (%ld off "
		 "colour 1), a second one %ld (%ld off)", nmove, (unsigned long long)lo,
		 (unsigned long long)hi, nfill, (unsigned long long)top, margin, moved[0],
		 off[0], moved[1], off[1]);
	if (pc_nr_colors <= MOVES_MAX_COLORS)
		tap_ok(moved[0] >= 0 && moved[1] >= 0 &&
		       moved[0] + moved[1] >= (nmove + 7) / 8,
		       "compaction moved %ld of the %d pages of colour 1 (then %ld more), "
		       "at least an eighth", moved[0], nmove, moved[1]);
	else
		tap_skip("%d colours: %ld and %ld of the %d pages moved, printed only",
			 pc_nr_colors, moved[0], moved[1], nmove);
	tap_ok(off[0] == 0 && off[1] == 0,
	       "every one stayed on a frame of colour 1 (%ld and %ld off)", off[0],
	       off[1]);
	if (fill)
		munmap(fill, nfill * pc_page_size);
	if (boost_factor[0])
		pc_write_file(BOOST_FACTOR, boost_factor);
	if (pid > 0) {
		close(cmd[1]);
		close(ans[0]);
		waitpid(pid, &st, 0);
	}
	free(fill_pfns);
	free(pfns);
}

/*
 * (e): the child of (e), root, bound to colour 1: touch @k pages, keep the
 * first in each pageblock, give back the rest; answer with the mapping's
 * address and the pages kept, then wait for @cmd to close.
 */
static void spread_child(int cmd, int ans, size_t k)
{
	pagecolor_set_t set = pc_set("1");
	uint64_t *pfns = calloc(k, sizeof(*pfns));
	uintptr_t out[2] = { 0, 0 };
	size_t i, j;
	char *p, c;

	p = mmap(NULL, k * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (pfns && p != MAP_FAILED && !pagecolor_set_policy(COLOR_MODE_BIND, &set)) {
		madvise(p, k * pc_page_size, MADV_NOHUGEPAGE);
		pc_touch(p, k);
		if (!pagecolor_pfns(p, k, pfns)) {
			out[0] = (uintptr_t)p;
			for (i = 0; i < k; i++) {
				for (j = 0; j < i; j++)
					if (pfns[j] / BLOCK_PAGES == pfns[i] / BLOCK_PAGES)
						break;
				if (j < i)
					madvise(p + i * pc_page_size, pc_page_size, MADV_DONTNEED);
				else
					out[1]++;
			}
		}
	}
	if (write(ans, out, sizeof(out)) != sizeof(out))
		_exit(22);
	while (read(cmd, &c, 1) > 0)
		;
	_exit(0);
}

/* Distinct pageblocks of the present frames of @pfns; in *@off, those off @color. */
static long present_blocks(uint64_t *pfns, size_t n, int color, long *off)
{
	size_t i, m = 0;

	*off = 0;
	for (i = 0; i < n; i++) {
		if (!pfns[i])
			continue;
		if (pagecolor_pfn_color(pfns[i], pc_nr_colors) != color)
			(*off)++;
		pfns[m++] = pfns[i];
	}
	return distinct_blocks(pfns, m);
}

/*
 * Up to this share of the bystander's huge pages may be lost to the
 * minimum pageblocks the kept pages of (e) need for (e) to check the 90%.
 */
#define SPREAD_MIN_SHARE	20	/* 1/20 */

/* (e): see the top of the file. */
static void bystander_keeps_huge_pages(void)
{
	long thp_before, thp_with = -1, before = -1, after = -1, off = -1, minimum = -1;
	size_t share, k, per_block = BLOCK_PAGES / pc_nr_colors;
	uint64_t *pfns = NULL;
	uintptr_t got[2] = { 0, 0 };
	int cmd[2], ans[2], st;
	pid_t pid = -1;

	share = (size_t)(pc_meminfo_kb("MemTotal") * 1024 / pc_page_size / pc_nr_colors);
	k = share / 2 < SPREAD_PAGES ? share / 2 : SPREAD_PAGES;
	pc_write_file(COMPACT, "1");
	thp_before = bystander_thp();
	pfns = calloc(k, sizeof(*pfns));
	if (pfns && !pipe(cmd) && !pipe(ans)) {
		pid = fork();
		if (pid == 0) {
			close(cmd[1]);
			close(ans[0]);
			spread_child(cmd[0], ans[1], k);
		}
		close(cmd[0]);
		close(ans[1]);
		if (pid < 0 || read(ans[0], got, sizeof(got)) != sizeof(got))
			got[0] = 0;
	}
	if (got[0] && !pagecolor_pid_pfns(pid, got[0], k, pfns)) {
		before = present_blocks(pfns, k, 1, &off);
		pc_wait_parked(1, 5000);
		pc_write_file(COMPACT, "1");
		pc_write_file(COMPACT, "1");
		if (!pagecolor_pid_pfns(pid, got[0], k, pfns))
			after = present_blocks(pfns, k, 1, &off);
		thp_with = bystander_thp();
	}
	per_block = per_block ? per_block : 1;
	minimum = ((long)got[1] + (long)per_block - 1) / (long)per_block;
	tap_diag("(e) %lu pages of colour 1 kept of %zu, one a pageblock: in %ld pageblocks "
		 "(minimum %ld), %ld after vm.compact_memory twice (%ld off colour 1); "
		 "bystander huge pages %ld without them, %ld beside them",
		 (unsigned long)got[1], k, before, minimum, after, off, thp_before,
		 thp_with);
	tap_ok(before > 0 && after > 0 && off == 0 && after <= (before + minimum) / 2,
	       "compaction packed them: %ld pageblocks, at most half way from %ld to the "
	       "minimum %ld, and none off colour 1 (%ld)", after, before, minimum, off);
	if (thp_before > 0 && minimum * SPREAD_MIN_SHARE <= thp_before)
		tap_ok(before > 0 && after > 0 && off == 0 && thp_with * 10 >= thp_before * 9,
		       "a bystander gets %ld huge pages beside %lu pages of colour 1 "
		       "spread over %ld pageblocks, at least 90%% of %ld without them",
		       thp_with, (unsigned long)got[1], before, thp_before);
	else
		tap_skip("%d colours: %lu pages of one colour need %ld of the %ld pageblocks "
			 "a bystander gets (over 1/%d); its %ld huge pages beside them printed only",
			 pc_nr_colors, (unsigned long)got[1], minimum, thp_before,
			 SPREAD_MIN_SHARE, thp_with);
	if (pid > 0) {
		close(cmd[1]);
		close(ans[0]);
		waitpid(pid, &st, 0);
	}
	free(pfns);
}

int main(void)
{
	long long restrict_old, proactive_old, p1, p2, p3, scan0, scanned;
	long per_block, minimum, blocks, thp0, thp1, free0, free1, score;
	int cmd[2], ans[2], st;
	char defrag[64] = "", buf[32];
	uint64_t *pfns;
	uintptr_t addr;
	size_t frag_len = 0, share, npages, more;
	char *frag;
	FILE *f;
	pid_t pid;

	pc_init(9);
	if (geteuid() != 0) {
		tap_diag("must run as root (pagemap of the child, sysctls, drain)");
		return tap_finish();
	}
	f = fopen(PC_THP_DEFRAG, "r");
	if (f) {
		if (fgets(defrag, sizeof(defrag), f))
			defrag[strcspn(defrag, "\n")] = 0;
		fclose(f);
	}
	pc_write_file(PC_THP_DEFRAG, "madvise");
	restrict_old = read_ll(RESTRICT);
	if (restrict_old >= 0)
		pc_write_file(RESTRICT, "0");

	pc_wait_parked(1, 5000);
	pc_write_file(COMPACT, "1");
	free0 = pc_free_blocks(9, NULL);
	thp0 = bystander_thp();

	share = (size_t)(pc_meminfo_kb("MemTotal") * 1024 / pc_page_size / pc_nr_colors);
	npages = share / 2 < NPAGES_MAX ? share / 2 : NPAGES_MAX;
	more = share / 8 < NPAGES_MAX ? share / 8 : NPAGES_MAX;
	pfns = calloc(npages, sizeof(*pfns));
	if (!pfns || pipe(cmd) || pipe(ans)) {
		tap_diag("setup: %s", strerror(errno));
		return tap_finish();
	}
	pid = fork();
	if (pid == 0) {
		close(cmd[1]);
		close(ans[0]);
		child(cmd[0], ans[1], npages + 2 * more, "0");
	}
	close(cmd[0]);
	close(ans[1]);

	/* (a) */
	addr = ask(cmd[1], ans[0], npages);
	pc_wait_parked(1, 5000);
	per_block = BLOCK_PAGES / pc_nr_colors ? BLOCK_PAGES / pc_nr_colors : 1;
	minimum = ((long)npages + per_block - 1) / per_block;
	blocks = addr && !pagecolor_pid_pfns(pid, addr, npages, pfns) ?
		 pageblocks(pfns, npages) : -1;
	free1 = pc_free_blocks(9, NULL);
	thp1 = bystander_thp();
	tap_diag("%zu pages of colour 0 of %d lie in %ld pageblocks (minimum %ld); free "
		 "order-9 blocks %ld before the child, %ld with it; bystander huge pages "
		 "%ld before, %ld with it", npages, pc_nr_colors, blocks, minimum, free0,
		 free1, thp0, thp1);
	tap_ok(blocks > 0, "the child got %zu pages, all of colour 0", npages);
	tap_ok(blocks >= minimum,
	       "they lie in %ld pageblocks, not fewer than the minimum %ld", blocks,
	       minimum);

	/* (b) */
	moves_within_colour();

	/* (c) */
	addr = ask(cmd[1], ans[0], more);
	p1 = pc_parked();
	pc_write_file(COMPACT, "1");
	p2 = pc_parked();
	tap_ok(addr && p1 > 0 && p2 <= p1 / 10,
	       "vm.compact_memory gives the parked pool back (%lld parked before, %lld after)",
	       p1, p2);

	/* (d) */
	addr = ask(cmd[1], ans[0], more);
	frag = fragment(&frag_len);
	free1 = pc_free_blocks(0, NULL);
	score = free1 > 0 ? (free1 - pc_free_blocks(9, NULL) * BLOCK_PAGES) * 100 / free1 : -1;
	p1 = pc_parked();
	proactive_old = read_ll(PROACTIVE);
	scan0 = pc_vmstat("compact_daemon_migrate_scanned") +
		pc_vmstat("compact_daemon_free_scanned");
	if (proactive_old >= 0)
		pc_write_file(PROACTIVE, "100");
	sleep(3);
	p3 = pc_parked();
	scanned = pc_vmstat("compact_daemon_migrate_scanned") +
		  pc_vmstat("compact_daemon_free_scanned") - scan0;
	if (proactive_old >= 0) {
		snprintf(buf, sizeof(buf), "%lld", proactive_old);
		pc_write_file(PROACTIVE, buf);
	}
	if (frag)
		munmap(frag, frag_len);
	tap_diag("proactive compaction: fragmentation score %ld, kcompactd scanned %lld "
		 "pages; %lld parked before, %lld after", score, scanned, p1, p3);
	tap_ok(addr && frag && score > 15 && p1 > 0 && p3 >= p1 - p1 / 10,
	       "fragmentation score %ld (over 15): proactive compaction kept the parked "
	       "pool (%lld parked before, %lld after)", score, p1, p3);

	close(cmd[1]);
	close(ans[0]);
	waitpid(pid, &st, 0);

	/* (e) */
	bystander_keeps_huge_pages();

	if (restrict_old >= 0) {
		snprintf(buf, sizeof(buf), "%lld", restrict_old);
		pc_write_file(RESTRICT, buf);
	}
	if (defrag[0]) {
		/* "always defer [madvise] never": the bracketed word */
		char *l = strchr(defrag, '['), *r = l ? strchr(l, ']') : NULL;

		if (l && r) {
			*r = 0;
			pc_write_file(PC_THP_DEFRAG, l + 1);
		}
	}
	pc_wait_parked(0, 10000);
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
