// SPDX-License-Identifier: GPL-2.0
/*
 * NUMA balancing and colour policies (issue 29 item 10).  Needs a guest
 * of two nodes, one vCPU each (make test's fifth boot: QEMU -numa, the
 * kernel booted with numa_balancing=enable).
 *
 * A process faults NPAGES pages while it runs on node 1's CPU, then runs
 * on node 0's CPU and keeps touching them: NUMA balancing's hinting
 * faults find them misplaced and migrate them to node 0, to a frame the
 * target node's allocator picks, of any colour.  The series' rule
 * (page_coloring.rst, "Other paths that move pages"): a page of a colour
 * policy stays where it is, as compaction leaves it; the scheduler may
 * move the task to its memory instead.
 *
 *  1. two nodes, a CPU on each, NUMA balancing on;
 *  2. control: an uncoloured process's pages, faulted on node 1, are
 *     migrated to node 0 (at least half of them) while it runs there;
 *  3. a process bound to colour COLOR faults its pages on node 1, all of
 *     its colour (the premise);
 *  4. it runs on node 0 as long as the control needed (at least 5 s)
 *     and takes NUMA hinting faults: every page is still of its colour
 *     (how many moved to node 0 is printed);
 *  5. its contents intact; no BUG/WARNING in dmesg.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>

#define NPAGES		256
#define COLOR		7
#define NUMA_DBG	"/sys/kernel/debug/sched/numa_balancing/"

static int cpu0, cpu1;

/*
 * A child's body (pc_child_start()): on node 1's CPU, map and fault
 * NPAGES pages (bound to the colours in @arg when not NULL); report the
 * address; on a byte from the parent move to node 0's CPU and touch the
 * pages until the next byte, then report damaged bytes and wait to be
 * killed.
 */
static int child(void *arg, int cmd, int ans)
{
	const char *colours = arg;
	size_t i, bad = 0;
	char *p, x;

	pc_run_on(cpu1);
	p = mmap(NULL, NPAGES * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	if (colours) {
		pagecolor_set_t s = pc_set(colours);

		if (pagecolor_mbind(p, NPAGES * pc_page_size, COLOR_MODE_BIND, &s, 0))
			return 1;
	}
	for (i = 0; i < NPAGES; i++)
		memset(p + i * pc_page_size, (int)(i & 0x7f) + 1, pc_page_size);
	if (write(ans, &p, sizeof(p)) != sizeof(p) || read(cmd, &x, 1) != 1)
		return 1;
	pc_run_on(cpu0);
	fcntl(cmd, F_SETFL, O_NONBLOCK);
	while (read(cmd, &x, 1) != 1)
		for (i = 0; i < NPAGES; i++)
			((volatile char *)p)[i * pc_page_size + 64] = (char)((i & 0x7f) + 1);
	for (i = 0; i < NPAGES * (size_t)pc_page_size; i++)
		bad += p[i] != (char)(((i / pc_page_size) & 0x7f) + 1);
	if (write(ans, &bad, sizeof(bad)) != sizeof(bad))
		return 1;
	pause();
	return 0;
}

struct where {
	int node[2], other, off_colour;
};

static int where(pid_t pid, char *addr, int colour, struct where *w)
{
	uint64_t pfns[NPAGES];
	int i, n;

	memset(w, 0, sizeof(*w));
	if (pagecolor_pid_pfns(pid, (uintptr_t)addr, NPAGES, pfns))
		return -1;
	for (i = 0; i < NPAGES; i++) {
		n = pfns[i] ? pc_pfn_node(pfns[i]) : -1;
		if (n == 0 || n == 1)
			w->node[n]++;
		else
			w->other++;
		if (colour >= 0 && (!pfns[i] ||
				    pagecolor_pfn_color(pfns[i], pc_nr_colors) != colour))
			w->off_colour++;
	}
	return 0;
}

int main(void)
{
	long long mig0, mig1, hint0, hint1, bal;
	int trouble, cmd, ans, i;
	struct where w0, w;
	double t0, need;
	size_t bad = (size_t)-1;
	char *p = NULL, x = 1;
	pid_t pid;

	pc_init(6);
	trouble = pc_dmesg_trouble();
	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	cpu0 = pc_node_cpu(0);
	cpu1 = pc_node_cpu(1);
	{
		FILE *f = fopen("/proc/sys/kernel/numa_balancing", "r");

		bal = -1;
		if (f) {
			if (fscanf(f, "%lld", &bal) != 1)
				bal = -1;
			fclose(f);
		}
	}
	tap_ok(cpu0 >= 0 && cpu1 >= 0 && cpu0 != cpu1 && bal == 1,
	       "two nodes with a CPU each (node 0: cpu %d, node 1: cpu %d), "
	       "kernel.numa_balancing %lld", cpu0, cpu1, bal);
	if (cpu0 < 0 || cpu1 < 0 || cpu0 == cpu1 || bal != 1)
		return tap_finish();
	/* scan soon and often (debugfs; the defaults only make it slower) */
	pc_write_file(NUMA_DBG "scan_delay_ms", "100");
	pc_write_file(NUMA_DBG "scan_period_min_ms", "100");
	pc_write_file(NUMA_DBG "scan_period_max_ms", "400");

	/* 2: control */
	pid = pc_child_start(child, NULL, &p, &cmd, &ans);
	if (!p || where(pid, p, -1, &w0)) {
		tap_ok(0, "uncoloured child faulted its pages");
		return tap_finish();
	}
	mig0 = pc_vmstat("numa_pages_migrated");
	t0 = pc_now();
	if (write(cmd, &x, 1) != 1)
		return tap_finish();
	for (i = 0; i < 300; i++) {
		usleep(100000);
		if (where(pid, p, -1, &w) || w.node[0] >= NPAGES / 2)
			break;
	}
	need = pc_now() - t0;
	mig1 = pc_vmstat("numa_pages_migrated");
	pc_child_stop(pid, cmd, ans, &bad);
	tap_ok(w0.node[1] >= NPAGES * 9 / 10 && w.node[0] >= NPAGES / 2 && bad == 0,
	       "uncoloured: faulted on node 1 (%d of %d there), running on node 0 "
	       "%d moved there in %.1f s (numa_pages_migrated +%lld), contents intact",
	       w0.node[1], NPAGES, w.node[0], need, mig1 - mig0);
	if (need < 5)
		need = 5;

	/* 3, 4: a process bound to one colour */
	pc_wait_parked(1, 30000);
	p = NULL;
	pid = pc_child_start(child, "7", &p, &cmd, &ans);
	if (!p || where(pid, p, COLOR, &w0)) {
		tap_ok(0, "coloured child faulted its pages");
		return tap_finish();
	}
	tap_ok(w0.off_colour == 0 && w0.node[1] > 0,
	       "bound to colour %d: %d of %d pages off the colour, %d on node 1 and "
	       "%d on node 0 while it ran on node 1", COLOR, w0.off_colour, NPAGES,
	       w0.node[1], w0.node[0]);
	mig0 = pc_vmstat("numa_pages_migrated");
	hint0 = pc_vmstat("numa_hint_faults");
	if (write(cmd, &x, 1) != 1)
		return tap_finish();
	t0 = pc_now();
	while (pc_now() - t0 < 2 * need)
		usleep(100000);
	mig1 = pc_vmstat("numa_pages_migrated");
	hint1 = pc_vmstat("numa_hint_faults");
	where(pid, p, COLOR, &w);
	tap_ok(w.off_colour == 0 && hint1 - hint0 >= NPAGES,
	       "after %.1f s on node 0: %d of %d pages off colour %d; %d on node 0, "
	       "%d on node 1 (was %d and %d); numa_hint_faults +%lld, "
	       "numa_pages_migrated +%lld", pc_now() - t0, w.off_colour, NPAGES, COLOR,
	       w.node[0], w.node[1], w0.node[0], w0.node[1], hint1 - hint0, mig1 - mig0);
	pc_child_stop(pid, cmd, ans, &bad);
	tap_ok(bad == 0, "its contents intact (%zd bytes damaged)", (ssize_t)bad);
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
