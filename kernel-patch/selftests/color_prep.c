// SPDX-License-Identifier: GPL-2.0
/*
 * A page of a colour is prepared as the buddy allocator prepares a page,
 * once (issue 29 item 8).
 *
 * With nothing parked, process A (bound to colour 0) faults one page: the
 * refill that gives it parks one page of every other colour.  Process B
 * (bound to colour 1) then faults pages of colour 1, the first of them one
 * that A's refill parked.  Every page B gets must read zero but for the
 * byte it wrote, and where the kernel was booted with page_owner=on
 * (make test's "prep" boot, with init_on_alloc=1), page_owner must name
 * B's own allocation (pid B) for each of its pages: before, it named the
 * refill, in another process, since a parked page was handed out without
 * post_alloc_hook().
 */
#include "pc_test.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>

#define PAGE_OWNER	"/sys/kernel/debug/page_owner"
#define NPAGES		8

/* Map n pages bound to colour @c, write one byte to each; NULL on error. */
static char *bound(int c, size_t n)
{
	pagecolor_set_t s;
	char list[16];
	char *p;

	snprintf(list, sizeof(list), "%d", c);
	s = pc_set(list);
	p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || pagecolor_mbind(p, n * pc_page_size, COLOR_MODE_BIND, &s, 0))
		return NULL;
	pc_touch(p, n);
	return p;
}

/* Start a child that binds n pages to colour @c and waits; its pages' address. */
static pid_t holder(int c, size_t n, char **addr, int *release, long *nonzero)
{
	int up[2], down[2];
	pid_t pid;
	char x;

	if (pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid == 0) {
		char *p = bound(c, n);
		long bad = 0;
		size_t i, j;

		for (i = 0; p && i < n; i++)
			for (j = 1; j < (size_t)pc_page_size; j++)
				bad += p[i * pc_page_size + j] != 0;
		if (write(up[1], &p, sizeof(p)) != sizeof(p) ||
		    write(up[1], &bad, sizeof(bad)) != sizeof(bad))
			_exit(1);
		close(down[1]);
		while (read(down[0], &x, 1) > 0)
			;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	if (pid < 0 || read(up[0], addr, sizeof(*addr)) != sizeof(*addr) ||
	    read(up[0], nonzero, sizeof(*nonzero)) != sizeof(*nonzero))
		*addr = NULL;
	close(up[0]);
	*release = down[1];
	return pid;
}

int main(void)
{
	uint64_t pfns[NPAGES];
	long nz_a = -1, nz_b = -1, owners = 0, pid_ok = 0;
	char *pa = NULL, *pb = NULL;
	int ra = -1, rb = -1, fd, trouble, i;
	long long parked;
	pid_t a, b;

	pc_init(4);
	trouble = pc_dmesg_trouble();
	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	parked = pc_wait_parked(1, 30000);
	a = holder(0, 1, &pa, &ra, &nz_a);
	b = holder(1, NPAGES, &pb, &rb, &nz_b);
	tap_ok(parked == 0 && pa && pb,
	       "nothing parked (%lld), then A bound to colour 0 and B to colour 1 "
	       "faulted their pages", parked);
	tap_ok(nz_a == 0 && nz_b == 0,
	       "every page reads zero but the byte written (non-zero bytes: A %ld, B %ld)",
	       nz_a, nz_b);

	fd = open(PAGE_OWNER, O_RDONLY);
	if (fd < 0 || !pb || pagecolor_pid_pfns(b, (uintptr_t)pb, NPAGES, pfns)) {
		tap_skip("page_owner: %s not readable (boot with page_owner=on): %s",
			 PAGE_OWNER, strerror(errno));
	} else {
		for (i = 0; i < NPAGES; i++) {
			struct pc_owner rec;
			long o = pc_owner_at(fd, pfns[i], &rec) ? -1 : rec.pid;

			owners += o >= 0;
			pid_ok += o == b;
			if (o != b)
				tap_diag("B's page %d (pfn %#llx, colour %d): page_owner "
					 "pid %ld, B is %d, A %d", i,
					 (unsigned long long)pfns[i],
					 pagecolor_pfn_color(pfns[i], pc_nr_colors), o,
					 (int)b, (int)a);
		}
		tap_ok(pid_ok == NPAGES, "page_owner records B's own allocation for "
		       "each of its %d pages (%ld of %ld records)", NPAGES, pid_ok, owners);
	}
	if (fd >= 0)
		close(fd);
	close(ra);
	close(rb);
	if (a > 0)
		waitpid(a, NULL, 0);
	if (b > 0)
		waitpid(b, NULL, 0);
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops (bad page) in dmesg");
	return tap_finish();
}
