// SPDX-License-Identifier: GPL-2.0
/*
 * Colour-aimed reclaim honours memory cgroup protection (issue 29 item 3).
 *
 * An uncoloured bystander in a cgroup v2 group whose memory.min covers
 * its page cache reads the first quarter of memory's worth of a RAM disk
 * (/dev/ram0); the test itself, in the root group, then reads on past it
 * until memory is full of page cache, most of it unprotected.  An
 * unprivileged attacker (uid/gid 65534, allowed to colour by
 * vm.page_color_restrict = 0 for the test) binds half of a colour's
 * share of memory to that colour, over twice what free memory gives the
 * colour, so the allocator must reclaim where the colour is.  The colour
 * is the last one: the tests before this one in make test's lists bind
 * colour 0 and give its frames back in small blocks, so that colour 0 can
 * have several times the average free frames this test counts on (85
 * where 9 were counted at 1,024 colours with 2 MiB pageblocks).
 *
 * It must get every page from the unprotected cache, and the bystander's
 * cache must stay resident to the page (mincore() on a mapping of the RAM
 * disk, exact where memory.stat is batched per CPU): ordinary reclaim never
 * goes below memory.min, and neither may the reclaim aimed at a colour.
 *
 * Then the same group is protected by memory.low instead (memory_low()):
 * with unprotected cache there the bystander keeps its cache and no "low"
 * event is counted; with only its cache left to reclaim (the rest of
 * memory anonymous, no swap) the aimed reclaim's second walk takes it,
 * counting "low" events in memory.events, and the attacker gets its pages
 * without an OOM kill.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define RAMDISK		"/dev/ram0"
#define CGPROT		PC_CGROOT "/color_memcg_prot"
#define SYSCTL		"/proc/sys/vm/page_color_restrict"
#define NOBODY		65534
#define IDLE_MS		60000
#define TIMEOUT		300	/* seconds; TCG is slow */
#define EXIT_BADCOLOR	43

/* The colour the attackers bind and the bystander's cache is counted on. */
static int test_color;
static char test_color_list[16];

static void on_alarm(int sig)
{
	(void)sig;	/* only interrupts the parent's read() */
}

/* Pages of [0, len) of the RAM disk in its page cache (mincore), -1 on error. */
static long resident(const void *map, size_t len)
{
	size_t n = len / pc_page_size, i;
	unsigned char *vec = malloc(n);
	long r = 0;

	if (!vec || mincore((void *)map, len, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < n; i++)
		r += vec[i] & 1;
	free(vec);
	return r;
}

/*
 * Frames of colour @color on an LRU list and charged to the protected
 * group (/proc/kpageflags, /proc/kpagecgroup: its directory's inode), -1 on
 * error: the cache a reclaim aimed at the colour can take from it.
 */
static long group_pages_of_color(int color)
{
	int ff = open("/proc/kpageflags", O_RDONLY), fc = open("/proc/kpagecgroup", O_RDONLY);
	uint64_t flags, ino;
	struct stat st;
	long n = -1;
	off_t pfn;

	if (ff >= 0 && fc >= 0 && !stat(CGPROT, &st)) {
		n = 0;
		for (pfn = color; pread(fc, &ino, 8, pfn * 8) == 8 &&
				  pread(ff, &flags, 8, pfn * 8) == 8; pfn += pc_nr_colors)
			n += ino == st.st_ino && (flags & (1ULL << KPF_LRU));
	}
	if (ff >= 0)
		close(ff);
	if (fc >= 0)
		close(fc);
	return n;
}

/* Set up the protected group: 0, or -1 (with a diagnostic). */
static int cgroup_setup(long long min_bytes)
{
	char val[64];

	if (pc_cgroup_make(CGPROT))
		return -1;
	snprintf(val, sizeof(val), "%lld", min_bytes);
	if (pc_write_file(CGPROT "/memory.min", val)) {
		tap_diag("memory.min: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The bystander: joins the protected group, reads [0, bytes), exits. */
static int bystander(int fd, long long bytes)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		char me[32];

		snprintf(me, sizeof(me), "%d", getpid());
		if (pc_write_file(CGPROT "/cgroup.procs", me)) {
			printf("# %s: %s\n", CGPROT "/cgroup.procs", strerror(errno));
			_exit(20);
		}
		_exit(pc_read_range(fd, 0, bytes) == bytes ? 0 : 21);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* What the attacker tells root once it has touched its pages. */
struct attack {
	char *addr;
	size_t pages;
};

/*
 * The attacker: uid 65534, pages bound to the colour.  With @then 0 it
 * touches @n pages.  Otherwise it touches pages until the reclaim aimed at
 * the colour has run (so the colour's free pages, however many there were,
 * are gone) and @then more, at most @n in all.  It cannot read its own
 * frame numbers (pagemap hides them from it): it writes where its pages
 * are to @out and waits for @in to close while root checks the colours.
 */
static void attacker(size_t n, size_t then, int out, int in)
{
	unsigned long long rc0, rc;
	struct attack a;
	size_t limit = n;
	char c;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		_exit(21);
	if (then && pagecolor_read_counter("reclaimed", &rc0))
		_exit(24);
	a.addr = pc_child_bound(test_color_list, n, 22);
	for (a.pages = 0; a.pages < limit; a.pages++) {
		a.addr[a.pages * pc_page_size] = 1;
		/* a sysfs read every 8 pages: the reclaim frees 32 at a time */
		if (then && limit == n && a.pages % 8 == 7 &&
		    !pagecolor_read_counter("reclaimed", &rc) && rc > rc0)
			limit = a.pages + 1 + then < n ? a.pages + 1 + then : n;
	}
	if (write(out, &a, sizeof(a)) != sizeof(a))
		_exit(23);
	while (read(in, &c, 1) > 0)
		;
	_exit(0);
}

/* Root's look at the attacker's n pages at @addr: pages not of the colour. */
static long attacker_bad_pages(pid_t pid, uintptr_t addr, size_t n)
{
	uint64_t *pfns = calloc(n, sizeof(*pfns));
	long bad = 0;
	size_t i;

	if (!pfns || pagecolor_pid_pfns(pid, addr, n, pfns)) {
		free(pfns);
		return -1;
	}
	for (i = 0; i < n; i++)
		bad += !pfns[i] || pagecolor_pfn_color(pfns[i], pc_nr_colors) != test_color;
	free(pfns);
	return bad;
}

/* The group's memory.events counter @key ("low", "min", ...), -1 if absent. */
static long long memcg_event(const char *key)
{
	return pc_cgroup_value(CGPROT, "memory.events", key);
}

/*
 * Run the attacker for pages of the colour, @want and @then as attacker()'s
 * @n and @then (vm.page_color_restrict 0 meanwhile): its wait status (-1 if
 * it could not be waited for); the pages it touched go to @got_pages (if
 * not NULL), those not of the colour or absent to @bad (-1: it never got
 * them all).
 */
static int run_attacker(size_t want, size_t then, size_t *got_pages, long *bad)
{
	int up[2], down[2], st = -1, restrict0 = -1;
	struct attack a = { NULL, 0 };
	struct sigaction sa;
	char buf[32];
	ssize_t got;
	FILE *f;
	pid_t pid;

	*bad = -1;
	f = fopen(SYSCTL, "r");
	if (f) {
		if (fscanf(f, "%d", &restrict0) != 1)
			restrict0 = -1;
		fclose(f);
	}
	pc_write_file(SYSCTL, "0");
	if (pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		attacker(want, then, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	/* the attacker's address once it touched every page (TCG is slow) */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarm(TIMEOUT);
	got = pid > 0 ? read(up[0], &a, sizeof(a)) : -1;
	alarm(0);
	if (got_pages)
		*got_pages = a.pages;
	if (got == sizeof(a))
		*bad = attacker_bad_pages(pid, (uintptr_t)a.addr, a.pages);
	else if (got == 0)
		tap_diag("attacker exited before it touched all its pages");
	if (*bad == -1 && pid > 0 && got != 0) {
		tap_diag("attacker did not touch its pages in %d s: killing it", TIMEOUT);
		kill(pid, SIGKILL);
	}
	close(down[1]);
	close(up[0]);
	if (pid > 0 && waitpid(pid, &st, 0) != pid)
		st = -1;
	if (restrict0 >= 0) {
		snprintf(buf, sizeof(buf), "%d", restrict0);
		pc_write_file(SYSCTL, buf);
	}
	return st;
}

static int exited_ok(int st)
{
	return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* pc_start_holder()'s child: holds *@arg pages of anonymous memory. */
static void fill_anon(void *arg)
{
	size_t pages = *(size_t *)arg, i;
	char *m = mmap(NULL, pages * pc_page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		_exit(20);
	for (i = 0; i < pages; i++)
		m[i * pc_page_size] = 1;
}

/*
 * An uncoloured process that holds @pages of anonymous memory (no swap
 * here: nothing reclaims it) until it is killed.  Its pid, or -1.
 */
static pid_t filler(size_t pages)
{
	return pc_start_holder(fill_anon, &pages);
}

/*
 * memory.low (issue 29 item 3's second rule): with unprotected cache in
 * the colour, the aimed reclaim leaves the bystander's cache (below its
 * memory.low) alone and counts no MEMCG_LOW event; with only the
 * bystander's cache left to reclaim there, a first walk reclaims nothing
 * and skips it, and a second walk with memcg_low_reclaim takes it,
 * counting "low" in memory.events, before any OOM kill.
 */
static void memory_low(int fd, const void *map, long long prot_bytes, size_t want)
{
	long long total = pc_meminfo_kb("MemTotal") * 1024, low0, low1, low2, low3;
	long prot_pages = prot_bytes / pc_page_size, res0, res1, res2, res3, bad, cache_c0;
	size_t then3, max3, got3 = 0;
	unsigned long long rc0 = 0, rc1 = 0, rc2 = 0, rc3 = 0, cap2 = 0, cap3 = 0;
	long long free_pages, margin, fill, free_c0;
	int st, kills0, kills1, idle;
	struct pc_zone_info zi;
	char val[32];
	pid_t fp;

	/* the same group, protected by memory.low instead of memory.min */
	snprintf(val, sizeof(val), "%lld", prot_bytes + (16 << 20));
	if (pc_write_file(CGPROT "/memory.low", val) ||
	    pc_write_file(CGPROT "/memory.min", "0")) {
		tap_diag("memory.low: %s", strerror(errno));
		tap_ok(0, "memory.low: setup");
		return;
	}
	/*
	 * Memory full of unprotected cache again: dropped and read anew, so
	 * that the pages the first attacker freed are taken.
	 */
	posix_fadvise(fd, prot_bytes, 0, POSIX_FADV_DONTNEED);
	fill = pc_read_range(fd, prot_bytes, total);
	idle = pc_wait_kswapd_idle(IDLE_MS);
	pc_wait_parked(1, IDLE_MS);
	res0 = resident(map, prot_bytes);
	low0 = memcg_event("low");
	kills0 = pc_dmesg_find("Out of memory: Killed process", NULL, 0);
	pagecolor_read_counter("reclaimed", &rc0);
	st = run_attacker(want, 0, NULL, &bad);
	res1 = resident(map, prot_bytes);
	low1 = memcg_event("low");
	pagecolor_read_counter("reclaimed", &rc1);
	tap_diag("memory.low with unprotected cache (%lld MiB read, kswapd %s): attacker "
		 "status 0x%x, %ld pages not of the colour; bystander's cache %ld -> %ld "
		 "pages; memory.events low %lld -> %lld; reclaimed %llu -> %llu",
		 fill >> 20, idle ? "busy" : "asleep", st, bad, res0, res1, low0, low1,
		 rc0, rc1);
	tap_ok(exited_ok(st) && bad == 0 && rc1 > rc0 && res0 >= prot_pages * 95 / 100 &&
	       res1 >= res0 && low0 >= 0 && low1 == low0,
	       "memory.low, unprotected cache in the colour: attacker got its %zu pages "
	       "(reclaimed +%llu), the bystander's cache kept (%ld -> %ld), no low "
	       "event (%lld -> %lld)", want, rc1 - rc0, res0, res1, low0, low1);

	/*
	 * Only the bystander's cache left: drop the unprotected cache, fill
	 * memory with anonymous memory (which no reclaim here can take) down
	 * to a margin above the high watermark, so kswapd stays asleep and
	 * the colour is short of free pages.
	 */
	posix_fadvise(fd, prot_bytes, 0, POSIX_FADV_DONTNEED);
	pc_wait_parked(1, IDLE_MS);
	margin = (pc_zone_info("DMA32", &zi) == 0 ? 2 * zi.high : 0) + (4 << 20) / pc_page_size;
	free_pages = pc_memfree_pages();
	fp = free_pages > margin ? filler((size_t)(free_pages - margin)) : -1;
	idle = pc_wait_kswapd_idle(IDLE_MS);
	pc_wait_parked(1, IDLE_MS);
	free_c0 = pc_memfree_pages() / pc_nr_colors;
	res2 = resident(map, prot_bytes);
	cache_c0 = group_pages_of_color(test_color);
	/*
	 * The binder takes the colour's free pages first.  How many there are
	 * is not known: the filler leaves free memory in blocks holding some
	 * colours and not others, so the average (free_c0) was once 11 more
	 * than the colour had (an OOM kill, 1,024 colours, 2 MiB pageblocks)
	 * and once more than the binder wanted (no reclaim, 16 colours).  So
	 * it touches pages until the aimed reclaim has run, then three
	 * quarters of the bystander's cache on the colour more, which must
	 * come from that cache, so the walks after the aimed reclaim's first
	 * batch (32 folios) must find the last of it.  (A first walk used to
	 * isolate and put back protected folios, which then waited in a
	 * per-CPU LRU batch, off the LRU, where the walks after could miss
	 * them: the likely cause of an OOM kill here at 1,024 colours in CI.)
	 * Its mapping is all free memory and that cache: it cannot run out.
	 */
	then3 = (size_t)(cache_c0 - cache_c0 / 4);
	max3 = (size_t)(free_c0 * pc_nr_colors + cache_c0);
	low2 = memcg_event("low");
	pagecolor_read_counter("reclaimed", &rc2);
	pagecolor_read_counter("captured", &cap2);
	/*
	 * kswapd may stay awake here (a watermark boost it cannot work off
	 * with only protected cache to take), and may take some of that
	 * cache too: "reclaimed" counts the aimed reclaim's pages alone.
	 */
	tap_diag("only protected cache: filler %lld pages (pid %d), margin %lld; %lld "
		 "free pages per colour; bystander's cache %ld pages, %ld on the colour; "
		 "binding up to %zu, %zu once reclaim ran; kswapd %s", free_pages - margin,
		 (int)fp, margin, free_c0, res2, cache_c0, max3, then3,
		 idle ? "awake" : "asleep");
	tap_ok(fp > 0 && res2 >= prot_pages * 95 / 100 && then3 > 32,
	       "memory.low, premise: only the bystander's cache is reclaimable, the "
	       "cache resident (%ld), more than a reclaim batch of it on the colour "
	       "(%ld)", res2, cache_c0);
	st = run_attacker(max3, then3, &got3, &bad);
	res3 = resident(map, prot_bytes);
	low3 = memcg_event("low");
	kills1 = pc_dmesg_find("Out of memory: Killed process", NULL, 0);
	pagecolor_read_counter("reclaimed", &rc3);
	pagecolor_read_counter("captured", &cap3);
	if (fp > 0) {
		kill(fp, SIGKILL);
		waitpid(fp, NULL, 0);
	}
	tap_diag("only protected cache: attacker status 0x%x, %zu pages touched, %ld not "
		 "of the colour; bystander's cache %ld -> %ld; memory.events low %lld -> "
		 "%lld; reclaimed %llu -> %llu (captured +%llu); OOM kills %d -> %d", st,
		 got3, bad, res2, res3, low2, low3, rc2, rc3, cap3 - cap2, kills0, kills1);
	tap_ok(exited_ok(st) && bad == 0 && got3 < max3 && kills1 == kills0,
	       "memory.low, only protected cache: attacker got its %zu pages of the colour "
	       "(fewer than %zu: the aimed reclaim ran), no OOM kill", got3, max3);
	tap_ok(rc3 > rc2 && low3 > low2 && res3 < res2,
	       "memory.low, only protected cache: the second walk took the bystander's "
	       "cache (reclaimed +%llu, lost %ld pages) and counted low events (%lld -> "
	       "%lld)", rc3 - rc2, res2 - res3, low2, low3);
}

int main(void)
{
	long long total_kb, prot_bytes, fill, full;
	unsigned long long rc0 = 0, rc1 = 0, cap0 = 0, cap1 = 0;
	int fd, st, trouble, kills0, kills1, idle, ok_setup;
	long res0, res1, prot_pages, parked, bad = -1;
	size_t per, want, free_c0;
	void *map;

	pc_init(10);
	test_color = pc_nr_colors - 1;
	snprintf(test_color_list, sizeof(test_color_list), "%d", test_color);
	tap_diag("the colour: %d", test_color);
	trouble = pc_dmesg_trouble();
	per = (size_t)(sysconf(_SC_PHYS_PAGES) / pc_nr_colors);
	/*
	 * Half of the colour's share: a quarter of its frames hold the
	 * protected cache, and more would leave the colour only the OOM
	 * killer (within the colour, which is right, but not this test).
	 */
	want = per / 2;
	pc_settle();
	total_kb = pc_meminfo_kb("MemTotal");
	prot_bytes = total_kb * 1024 / 4 / pc_page_size * pc_page_size;
	prot_pages = prot_bytes / pc_page_size;

	fd = open(RAMDISK, O_RDONLY);
	map = fd < 0 ? MAP_FAILED : mmap(NULL, prot_bytes, PROT_READ, MAP_SHARED, fd, 0);
	ok_setup = fd >= 0 && map != MAP_FAILED && !cgroup_setup(prot_bytes + (16 << 20));
	if (!ok_setup)
		tap_diag("%s: %s", RAMDISK, strerror(errno));
	/*
	 * The partition scan at boot read the first pages of the RAM disk
	 * into the root group's cache: drop them, so that all of
	 * [0, prot_bytes) is the bystander's.
	 */
	if (ok_setup)
		posix_fadvise(fd, 0, prot_bytes, POSIX_FADV_DONTNEED);
	if (ok_setup) {
		int rc = bystander(fd, prot_bytes);

		if (rc) {
			tap_diag("bystander failed: exit %d (20: joining the group, "
				 "21: reading)", rc);
			ok_setup = 0;
		}
	}
	/* the rest of memory: unprotected cache, read from the root group */
	fill = ok_setup ? pc_read_range(fd, prot_bytes, total_kb * 1024) : 0;
	idle = pc_wait_kswapd_idle(IDLE_MS);
	parked = pc_wait_parked(1, IDLE_MS);
	res0 = ok_setup ? resident(map, prot_bytes) : -1;
	full = pc_memfree_pages();
	free_c0 = (size_t)(full / pc_nr_colors);
	tap_diag("bystander's cache %ld of %ld pages resident (memory.min %lld MiB), "
		 "%lld MiB more read unprotected, %lld pages free (%zu per colour), "
		 "binding %zu pages to the colour", res0, prot_pages,
		 (prot_bytes >> 20) + 16, fill >> 20, full, free_c0, want);
	tap_ok(ok_setup && idle == 0 && parked == 0 && res0 >= prot_pages * 95 / 100 &&
	       free_c0 < want / 2,
	       "premise: the protected cache resident (%ld >= 95%% of %ld), kswapd "
	       "asleep, nothing parked, the colour short of free pages (%zu < %zu)",
	       res0, prot_pages, free_c0, want / 2);
	if (!ok_setup)
		return tap_finish();
	pc_color_census(test_color);

	kills0 = pc_dmesg_find("Out of memory: Killed process", NULL, 0);
	pagecolor_read_counter("reclaimed", &rc0);
	pagecolor_read_counter("captured", &cap0);
	st = run_attacker(want, 0, NULL, &bad);
	res1 = resident(map, prot_bytes);
	kills1 = pc_dmesg_find("Out of memory: Killed process", NULL, 0);
	pagecolor_read_counter("reclaimed", &rc1);
	pagecolor_read_counter("captured", &cap1);
	tap_diag("attacker status 0x%x; bystander's cache %ld -> %ld pages; "
		 "reclaimed %llu -> %llu (captured +%llu)", st, res0, res1, rc0, rc1,
		 cap1 - cap0);

	tap_ok(exited_ok(st) && bad == 0,
	       "uid 65534 got all %zu pages, every one of the colour (exit %d, %ld "
	       "of another colour or absent)", want,
	       st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1, bad);
	tap_ok(kills1 == kills0, "no OOM kill (%d -> %d)", kills0, kills1);
	tap_ok(rc1 > rc0, "the reclaim aimed at the colour ran on unprotected cache "
	       "(reclaimed %llu -> %llu)", rc0, rc1);
	tap_ok(res1 >= 0 && res1 >= res0,
	       "the bystander's cache under memory.min survived: %ld -> %ld pages "
	       "(lost %ld)", res0, res1, res0 - res1);

	memory_low(fd, map, prot_bytes, want);
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg");

	munmap(map, prot_bytes);
	close(fd);
	pc_wait_parked(0, 10000);
	return tap_finish();
}
