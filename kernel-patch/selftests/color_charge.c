// SPDX-License-Identifier: GPL-2.0
/*
 * Parked pages are charged to the memory cgroup that parked them (issue 29
 * item 1).
 *
 * A child in a cgroup v2 group limited to LIMIT (memory.max) binds to
 * colour 0 and touches a quarter of the limit (at most half the colour's
 * share of memory): each page of colour 0 it
 * gets is a refill that parks the block's other colours.  Uncharged, those
 * pages would sit outside the group's limit up to parked_limit (3% of
 * memory, four times the limit in 1 GiB); charged, they are the group's
 * ("color_parked" and "kernel" in memory.stat), and the group parks no
 * more than its limit leaves (the kernel stops at 3/4 of it).  Then:
 *
 * - the child touches uncoloured memory up to 7/8 of the limit: its
 *   charges must find room by the group's reclaim giving back what it
 *   parked (the colour shrinker is memcg-aware), with no OOM kill;
 * - parked anew by a second child, which is then killed, the pages stay
 *   charged to the group and leave it when given back (sysfs drain);
 * - parked anew, it leaves the group when handed out: a process of the
 *   root group bound to every colour but 0 takes those pages.
 */
#include "pc_test.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define CG		PC_CGROOT "/color_charge"
#define LIMIT		(8LL << 20)
#define IDLE_MS		60000

/* The group's memory.stat @key in pages (the file has bytes), -1 if absent. */
static long long pages_of(const char *key)
{
	long long v = pc_cgroup_value(CG, "memory.stat", key);

	return v < 0 ? -1 : v / pc_page_size;
}

static long long current_bytes(void)
{
	return pc_cgroup_value(CG, "memory.current", NULL);
}

/*
 * The binder (pc_child_start()): joins the group, touches *@arg pages
 * bound to colour 0 and sends their address; on a byte from the parent it
 * touches uncoloured pages up to 7/8 of the limit and answers how many.
 */
static int binder(void *arg, int cmd, int ans)
{
	size_t n = *(size_t *)arg, more = LIMIT / pc_page_size * 7 / 8 - n;
	char *p, c;

	if (pc_write_file(CG "/cgroup.procs", "0"))
		return 20;
	p = pc_child_bound_touch("0", n, 21);
	if (write(ans, &p, sizeof(p)) != sizeof(p))
		return 22;
	if (read(cmd, &c, 1) != 1)
		return 0;
	p = mmap(NULL, more * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 23;
	pc_touch(p, more);
	if (write(ans, &more, sizeof(more)) != sizeof(more))
		return 24;
	while (read(cmd, &c, 1) > 0)
		;
	return 0;
}

/* A root-group process bound to every colour but 0 touches @n pages: exit status. */
static int take_other_colours(size_t n)
{
	char list[32];
	pid_t pid;
	int st;

	snprintf(list, sizeof(list), "1-%d", pc_nr_colors - 1);
	pid = fork();
	if (pid == 0) {
		pc_child_bound_touch(list, n, 20);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

int main(void)
{
	size_t n, answer;
	long long headroom;
	long long parked0, parked1, cp1, kern1, cp2, cur3, cp3, cp4, cp5, oom0, oom1;
	unsigned long long refills0 = 0, refills1 = 0;
	int cmd, ans, st, trouble, tries, attempt, block_order;
	long blocks = -1;
	char *addr, val[32];
	pid_t pid;

	pc_init(7);
	block_order = pc_order_of(pc_nr_colors);
	signal(SIGPIPE, SIG_IGN);	/* a binder killed in its group: EPIPE */
	/* a quarter of the limit, at most half of colour 0's share of memory */
	n = LIMIT / 4 / pc_page_size;
	if (n > pc_color_share() / 2)
		n = pc_color_share() / 2;
	headroom = LIMIT / pc_page_size - (long long)n;
	trouble = pc_dmesg_trouble();
	if (pc_cgroup_make(CG)) {
		tap_skip("no cgroup v2 memory controller");
		return tap_finish();
	}
	snprintf(val, sizeof(val), "%lld", LIMIT);
	if (pc_write_file(CG "/memory.max", val))
		tap_diag("memory.max: %s", strerror(errno));
	pc_settle();
	/*
	 * Refills need free blocks of nr_colors pages: after tests that
	 * fragmented memory (the stress run, at 1,024 colours) or binders
	 * before, there may be none, and the binder would get its pages by the
	 * frame search alone: at most three rounds.
	 */
	tries = pc_make_free_blocks(block_order, 2, 3, &blocks, &parked0);
	tap_diag("free blocks of %d pages: %ld after %d compactions", pc_nr_colors, blocks, tries);
	pc_color_census(0);
	oom0 = pc_cgroup_value(CG, "memory.events", "oom_kill");

	pagecolor_read_counter("refills", &refills0);
	pid = pc_child_start(binder, &n, &addr, &cmd, &ans);
	pagecolor_read_counter("refills", &refills1);
	parked1 = pc_parked();
	cp1 = pages_of("color_parked");
	kern1 = pages_of("kernel");
	tap_diag("nr_colors %d; limit %lld pages, binder %zu pages of colour 0 (%llu "
		 "refills): parked %lld -> %lld; group's color_parked %lld pages, kernel %lld pages, "
		 "memory.current %lld kB", pc_nr_colors, LIMIT / pc_page_size, n,
		 refills1 - refills0, parked0, parked1, cp1, kern1,
		 current_bytes() >> 10);
	tap_ok(pid > 0 && addr, "the binder in a group limited to %lld kB got its %zu "
	       "pages of colour 0", LIMIT >> 10, n);
	tap_ok(parked0 == 0 && parked1 > 0 && parked1 - parked0 <= headroom,
	       "it parked pages (%lld -> %lld), no more than the limit leaves it (%lld)",
	       parked0, parked1, headroom);
	tap_ok(cp1 > 0 && cp1 <= parked1 - parked0 && cp1 >= parked1 - parked0 - pc_nr_colors &&
	       kern1 >= cp1,
	       "the parked pages are charged to the group: color_parked %lld of %lld "
	       "parked (all but its own colour's, at most a block), kernel %lld pages",
	       cp1, parked1 - parked0, kern1);

	/* up to 7/8 of the limit: only what it parked can make room */
	pc_child_stop(pid, cmd, ans, &answer);
	oom1 = pc_cgroup_value(CG, "memory.events", "oom_kill");
	cp2 = pages_of("color_parked");
	tap_diag("binder touched %zd uncoloured pages more; color_parked %lld -> %lld; "
		 "oom_kill %lld -> %lld", (ssize_t)answer, cp1, cp2, oom0, oom1);
	tap_ok(answer == (size_t)(LIMIT / pc_page_size * 7 / 8) - n && oom1 == oom0 &&
	       cp2 < cp1,
	       "at its limit the group's reclaim gave back what it parked (color_parked "
	       "%lld -> %lld), no OOM kill (%lld -> %lld)", cp1, cp2, oom0, oom1);

	/* parked anew, the pages stay charged after the binder, until given back */
	pid = pc_child_start(binder, &n, &addr, &cmd, &ans);
	pc_child_stop(pid, cmd, ans, NULL);
	cur3 = current_bytes();
	cp3 = pages_of("color_parked");
	pc_wait_parked(1, IDLE_MS);
	cp4 = pages_of("color_parked");
	tap_diag("parked anew, binder gone: color_parked %lld, memory.current %lld kB; "
		 "drained: color_parked %lld, memory.current %lld kB", cp3, cur3 >> 10, cp4,
		 current_bytes() >> 10);
	tap_ok(addr && cp3 > 0 && cp4 == 0 && current_bytes() < cur3 - cp3 * pc_page_size / 2,
	       "given back, the parked pages leave the group (color_parked %lld -> %lld)",
	       cp3, cp4);

	/*
	 * Parked anew, then handed out to a root-group process of other
	 * colours.  The binders before it may have left no free block to
	 * refill from (the binder then parks nothing): free blocks are made
	 * as at the start, and a binder that parked nothing is run once more.
	 */
	for (attempt = 0, cp4 = 0; attempt < 2 && cp4 == 0; attempt++) {
		tries = pc_make_free_blocks(block_order, 2, 3, &blocks, NULL);
		pid = pc_child_start(binder, &n, &addr, &cmd, &ans);
		pc_child_stop(pid, cmd, ans, NULL);
		cp4 = pages_of("color_parked");
		tap_diag("binder %d: free blocks %ld after %d compactions; color_parked %lld",
			 attempt + 1, blocks, tries, cp4);
	}
	st = cp4 > 0 ? take_other_colours((size_t)cp4) : -1;
	cp5 = pages_of("color_parked");
	tap_diag("parked anew: color_parked %lld; after a root-group process of colours "
		 "1-%d took %lld pages (status 0x%x): %lld", cp4, pc_nr_colors - 1, cp4, st,
		 cp5);
	tap_ok(addr && cp4 > 0 && st == 0 && cp5 <= cp4 / 10,
	       "handed out, the parked pages leave the group (color_parked %lld -> %lld)",
	       cp4, cp5);

	pc_wait_parked(1, IDLE_MS);
	rmdir(CG);
	pc_color_census(0);
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
