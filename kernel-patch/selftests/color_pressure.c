// SPDX-License-Identifier: GPL-2.0
/*
 * Colouring must not cost the rest of the machine its large blocks.
 *
 * 1. A colour policy elsewhere does not hurt compaction for uncoloured
 *    memory.  Memory is fragmented (half the pages of 60% of free memory
 *    freed, see fragment()), then compacted through /proc/sys/vm/compact_memory;
 *    what counts is the free memory in blocks of a huge page's size it
 *    makes.  Rounds alternate without and with a process holding a colour
 *    policy and coloured pages, started before the fragmentation (its
 *    pages, which compaction leaves in place, are elsewhere); with the
 *    policy compaction must make at least 3/4 of what it makes without.
 *    Past 256 colours the coloured pages' pinning decides instead: a
 *    pageblock holds at most max(1, 512 / nr_colors) frames of each
 *    colour, so the coloured process's n pages of 8 colours pin at least
 *    n / (8 * max(1, 512 / nr_colors)) pageblocks, 64 at 256 colours
 *    (1,024 pages); at 512 colours and more it holds 512 pages, pinning
 *    64 again, and compaction with the policy must make at least what it
 *    makes without less the pinned pageblocks of its rounds (the test
 *    skips, with the numbers, when that bound is not above 0).
 *    A round whose compaction stopped early (its migrate scanner
 *    covered less than a tenth of memory) is done again with a new
 *    fragmentation, up to three times.
 *    After each compaction an
 *    uncoloured process asks for huge pages with THP defrag "always";
 *    that count is printed, not checked.
 * 2. Parked pages go back to the buddy allocator by themselves once the
 *    last colour policy is gone, and the free blocks of the largest order
 *    come back to their count before the coloured run.
 * 3. No BUG/WARNING/Oops.
 *
 * The numbers are printed as "# pressure:" lines for TESTING.md.
 */
#include "pc_test.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define ROUNDS		4	/* without, with, without, with */
#define WANT_HUGE	32	/* huge pages asked for per round */
#define COLORED_SET	"0-7"	/* the coloured process's colours */
#define COLORED_NR	8	/* how many they are */
#define COLORED_MAX	1024	/* the coloured process's memory, at most */
#define PINNED_WANT	64	/* pageblocks its memory pins at least */
#define BLOCK_PAGES	512	/* a pageblock (order 9) */
#define TRIES		3	/* times a round is tried, at most */

/* The coloured process's memory and the pageblocks it pins at least. */
static size_t colored_pages;
static long pinned_min;

static void colored_size(void)
{
	/* frames of the set a pageblock can hold */
	long per_block = COLORED_NR * (pc_nr_colors < BLOCK_PAGES ?
				       BLOCK_PAGES / pc_nr_colors : 1);

	colored_pages = PINNED_WANT * per_block;
	if (colored_pages > COLORED_MAX)
		colored_pages = COLORED_MAX;
	pinned_min = ((long)colored_pages + per_block - 1) / per_block;
}

static void stop_holder(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * Fill 60% of free memory and free half of it, every other page but with
 * the phase flipped every 32 pages.  Plain "every other page" puts all the
 * holes on one pfn parity, and 6.1's free scanner, whose stride doubles
 * up to 32 across blocks it isolates nothing from, then probes only the
 * other parity, never finds a hole and meets the migrate scanner near the
 * bottom of the zone: compaction makes nothing (TESTING.md).
 */
static void fragment(void *unused __attribute__((unused)))
{
	size_t n = (size_t)pc_memfree_pages() * 6 / 10, i;
	char *p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		_exit(1);
	madvise(p, n * pc_page_size, MADV_NOHUGEPAGE);
	pc_touch(p, n);
	for (i = 0; i < n; i++)
		if ((i + i / 32) & 1)
			madvise(p + i * pc_page_size, pc_page_size, MADV_DONTNEED);
}

/* A process with a bind policy and coloured pages, colours 0-7. */
static void hold_colors(void *unused __attribute__((unused)))
{
	if (!pc_bound_pages(COLORED_SET, colored_pages))
		_exit(1);
}

/* Huge pages an uncoloured process gets. */
static int huge_pages_got(void)
{
	size_t len = WANT_HUGE * PC_HUGE, i;
	char *h = pc_huge_area(len);
	int got = 0;

	if (!h)
		return -1;
	for (i = 0; i < WANT_HUGE; i++) {
		h[i * PC_HUGE] = 1;
		got += pc_is_thp(h + i * PC_HUGE);
	}
	munmap(h, len);
	return got;
}

#define HUGE_ORDER	9

/* The compaction counters of /proc/vmstat a round prints the growth of. */
static const char *const compact_stats[] = {
	"compact_migrate_scanned", "compact_free_scanned", "compact_isolated",
	"pgmigrate_success", "pgmigrate_fail",
};
#define NR_COMPACT_STATS	(sizeof(compact_stats) / sizeof(compact_stats[0]))

/*
 * Fragment memory, compact it, and return the huge-page blocks compaction
 * made (-1 on error); with_policy: a coloured process runs meanwhile.
 * *ended_early: the compaction's migrate scanner stopped within the first
 * tenth of memory.
 */
static long compaction_round(const char *name, int with_policy, int *ended_early)
{
	long long st[NR_COMPACT_STATS], growth[NR_COMPACT_STATS];
	pid_t frag, colored = 0;
	long before, after;
	char what[64];
	int n, ok;

	pagecolor_drain();
	pc_settle();
	if (with_policy)
		colored = pc_start_holder(hold_colors, NULL);
	frag = pc_start_holder(fragment, NULL);
	before = pc_free_blocks(HUGE_ORDER, NULL);
	pc_vmstats(compact_stats, NR_COMPACT_STATS, st);
	ok = !pc_write_file("/proc/sys/vm/compact_memory", "1");
	snprintf(what, sizeof(what), "pressure: %s compaction", name);
	pc_vmstats_growth(what, compact_stats, NR_COMPACT_STATS, st, growth);
	*ended_early = growth[0] < sysconf(_SC_PHYS_PAGES) / 10;
	after = pc_free_blocks(HUGE_ORDER, NULL);
	pc_write_file(PC_THP_DEFRAG, "always");
	n = huge_pages_got();
	pc_write_file(PC_THP_DEFRAG, "madvise");
	printf("# pressure: %s %s a colour policy elsewhere: compaction made "
	       "%ld huge-page blocks (%ld before, %ld after); then %d of %d huge "
	       "pages faulted\n", name, with_policy ? "with" : "without",
	       after - before, before, after, n, WANT_HUGE);
	stop_holder(colored);
	stop_holder(frag);
	if (!ok || frag <= 0 || (with_policy && colored <= 0) || before < 0 || after < 0)
		return -1;
	return after - before;
}

static void compaction_rounds(void)
{
	long made[2] = { 0, 0 }, n = 0, pinned;
	int r, try, early, ok = 1, stopped_early[2] = { 0, 0 };
	char name[32];

	/*
	 * A compaction that stops early, having made nothing, is done again
	 * with a new fragmentation, at most TRIES times, and counted.  The
	 * fragmentation no longer invites it (fragment()); this is the guard
	 * should anything else end a compaction early.  The first round is
	 * a warm-up.
	 */
	compaction_round("warm-up", 0, &early);
	for (r = 0; r < ROUNDS && ok; r++) {
		for (try = 1, early = 1; ok && early && try <= TRIES; try++) {
			snprintf(name, sizeof(name), "round %d try %d", r + 1, try);
			n = compaction_round(name, r & 1, &early);
			ok = n >= 0;
			stopped_early[r & 1] += early;
		}
		if (ok)
			made[r & 1] += n;
	}
	tap_diag("compactions that stopped early: %d without a policy, %d with",
		 stopped_early[0], stopped_early[1]);
	tap_ok(ok && made[0] > 0, "compaction makes huge-page blocks out of fragmented "
	       "memory (%ld in %d rounds without a colour policy)", made[0], ROUNDS / 2);
	if (pc_nr_colors <= 256) {
		tap_ok(ok && 4 * made[1] >= 3 * made[0],
		       "a colour policy elsewhere leaves compaction alone: %ld blocks made "
		       "with, %ld without (ratio %.2f)", made[1], made[0],
		       made[0] ? (double)made[1] / made[0] : 0.0);
		return;
	}
	/* its rounds' pinned pageblocks are what a policy may cost */
	pinned = pinned_min * (ROUNDS / 2);
	if (ok && made[0] <= pinned) {
		tap_skip("a colour policy elsewhere costs compaction no more than the "
			 "pageblocks it pins: %ld blocks made with, %ld without, %ld pinned "
			 "(%zu pages of %d colours of %d), a bound not above 0", made[1],
			 made[0], pinned, colored_pages, COLORED_NR, pc_nr_colors);
		return;
	}
	tap_ok(ok && made[1] >= made[0] - pinned,
	       "a colour policy elsewhere costs compaction no more than the pageblocks it "
	       "pins: %ld blocks made with, %ld without, %ld pinned (%zu "
	       "pages of %d colours of %d in each of %d rounds)", made[1], made[0], pinned,
	       colored_pages, COLORED_NR, pc_nr_colors, ROUNDS / 2);
}

static void parked_pages_return(void)
{
	unsigned long long parked = ~0ULL, peak = 0;
	long before, after = 0;
	pid_t pid;
	int st = -1, i;

	pagecolor_drain();
	pc_settle();
	before = pc_free_blocks(10, NULL);
	pid = fork();
	if (pid == 0) {
		hold_colors(NULL);
		pagecolor_read_counter("parked", &peak);
		printf("# pressure: %llu pages parked while the coloured process ran\n", peak);
		_exit(peak ? 0 : 2);
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
	/* no drain through sysfs: the kernel gives them back by itself */
	for (i = 0; i < 50; i++) {
		if (pagecolor_read_counter("parked", &parked) || !parked)
			break;
		usleep(100 * 1000);
	}
	/*
	 * The exiting child's pages reach the buddy lists through the other
	 * CPU's per-cpu lists and deferred frees: settle as before the run,
	 * then poll (bounded) rather than guess a sleep.
	 */
	pc_settle();
	for (i = 0; i < 50; i++) {
		after = pc_free_blocks(10, NULL);
		if (after >= before - 2)
			break;
		usleep(100 * 1000);
	}
	printf("# pressure: order-10 free blocks %ld before, %ld after the coloured "
	       "process exited; %llu pages parked after it\n", before, after, parked);
	tap_ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && parked == 0,
	       "parked pages go back once the last colour policy is gone (%llu left)",
	       parked);
	tap_ok(before > 0 && after >= before - 2,
	       "order-10 free blocks back after the coloured process (%ld, before %ld)",
	       after, before);
}

int main(void)
{
	pc_init(5);
	colored_size();
	tap_diag("the coloured process: %zu pages of colours %s, pinning at least %ld "
		 "pageblocks", colored_pages, COLORED_SET, pinned_min);
	compaction_rounds();
	parked_pages_return();
	pc_settle();
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
