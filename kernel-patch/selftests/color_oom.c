// SPDX-License-Identifier: GPL-2.0
/*
 * No OOM amplification through a colour (issue 29 item 2).
 *
 * Root's uncoloured bystander holds 200 MiB (a fifth of memory in a
 * smaller guest) while an unprivileged attacker (uid/gid 65534, allowed
 * to colour by vm.page_color_restrict = 0 for the test) binds itself to
 * one colour and touches twice that colour's share of memory.  The OOM
 * killer runs within the colour (CONSTRAINT_PAGE_COLOR) and, as for a
 * bind mempolicy, may only choose processes bound to that colour: the
 * attacker is killed, the bystander survives with its memory intact.
 *
 * Two rounds: the attacker bound by its task default (set_color_policy,
 * as in the report), then by a VMA policy (color_mbind) with no task
 * default.  A third (issue 51 item 4): root's bystander bound to half the
 * colours, colour 0 among them, holding 64 MiB: the victim is the process
 * with the most pages of the exhausted colour, the attacker, not the one
 * with the largest RSS.  The test process itself is OOM-immune (oom_score_adj -1000),
 * its children are not.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#define NOBODY		65534
#define SYSCTL		"/proc/sys/vm/page_color_restrict"
#define TIMEOUT		240	/* seconds; TCG is slow */

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), n = strlen(val), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, val, n) == n;
	close(fd);
	return ok ? 0 : -1;
}

static int read_int(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * Root's bystander: holds n pages, uncoloured (@colors NULL) or bound to
 * @colors by its task default; exits 0 when they are intact.
 */
static pid_t bystander_start(size_t n, const char *colors, int *stop)
{
	int go[2], ready[2];
	pid_t pid;
	char c;

	if (pipe(go) || pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		size_t j;
		long *p;

		close(go[1]);
		close(ready[0]);
		if (write_file("/proc/self/oom_score_adj", "0"))
			_exit(30);
		if (colors) {
			pagecolor_set_t s = pc_set(colors);

			if (pagecolor_set_policy(COLOR_MODE_BIND, &s))
				_exit(34);
		}
		p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(31);
		for (j = 0; j < n; j++)
			p[j * pc_page_size / sizeof(long)] = (long)j;
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(32);
		for (j = 0; j < n; j++)
			if (p[j * pc_page_size / sizeof(long)] != (long)j)
				_exit(33);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	if (pid < 0 || read(ready[0], &c, 1) != 1) {
		close(ready[0]);
		return -1;
	}
	close(ready[0]);
	*stop = go[1];
	return pid;
}

/*
 * The attacker: uid 65534, bound to colour 0 by its task default
 * (@vma 0) or by a VMA policy (@vma 1), touching n pages.  Exit 0 when it
 * touched them all, 42 on SIGBUS; 20+ setup errors.
 */
static void attacker(size_t n, int vma)
{
	pagecolor_set_t s = pc_set("0");
	size_t j;
	char *p;

	if (write_file("/proc/self/oom_score_adj", "0"))
		_exit(20);
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		_exit(21);
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	signal(SIGBUS, SIG_DFL);
	if (!vma && pagecolor_set_policy(COLOR_MODE_BIND, &s))
		_exit(22);
	p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		_exit(23);
	if (vma && pagecolor_mbind(p, n * pc_page_size, COLOR_MODE_BIND, &s, 0))
		_exit(24);
	for (j = 0; j < n; j++)
		p[j * pc_page_size] = 1;
	_exit(0);
}

static const char *describe(int st, char *buf, size_t len)
{
	if (st == -1)
		snprintf(buf, len, "timed out");
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, len, "exit %d", WEXITSTATUS(st));
	return buf;
}

/*
 * The attacker bound by its task default or a VMA policy (@vma) beside an
 * uncoloured bystander (@by_colors NULL), or beside a bystander bound to
 * @by_colors, colour 0 among them, with less of its memory on colour 0
 * than the attacker takes (issue 51 item 4: victims are scored by their
 * pages of the exhausted colours, not by their whole RSS).
 */
static void round_(int vma, size_t by_pages, size_t n, const char *by_colors)
{
	const char *how = by_colors ? "beside a wide binder" : vma ? "VMA policy" : "task default";
	const char *who = by_colors ? "wide binder" : "uncoloured bystander";
	char last[512], want[64], d1[32], d2[32];
	int stop = -1, st = -1, bst = -1, kills0, kills1, cons0, cons1, i, by_alive;
	pid_t by, pid;

	kills0 = pc_dmesg_find("Killed process", NULL, 0);
	cons0 = pc_dmesg_find("constraint=CONSTRAINT_PAGE_COLOR", NULL, 0);
	by = bystander_start(by_pages, by_colors, &stop);
	tap_ok(by > 0, "%s: root's %s holds %zu pages (colours %s)", how, who, by_pages,
	       by_colors ? by_colors : "all");

	pid = fork();
	if (pid == 0)
		attacker(n, vma);
	for (i = 0; pid > 0 && i < TIMEOUT * 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		st = -1;
		usleep(100 * 1000);
	}
	if (pid > 0 && st == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	kills1 = pc_dmesg_find("Killed process", last, sizeof(last));
	cons1 = pc_dmesg_find("constraint=CONSTRAINT_PAGE_COLOR", NULL, 0);
	tap_diag("%s: attacker %s, OOM kills %d -> %d, last: %s", how,
		 describe(st, d1, sizeof(d1)), kills0, kills1, kills1 > kills0 ? last : "-");

	by_alive = by > 0 && waitpid(by, &bst, WNOHANG) == 0;
	if (stop >= 0) {
		if (by_alive && write(stop, "s", 1) != 1)
			tap_diag("cannot wake the bystander");
		close(stop);
	}
	if (by > 0 && by_alive)
		waitpid(by, &bst, 0);
	snprintf(want, sizeof(want), "Killed process %d ", (int)pid);
	tap_ok(by_alive && WIFEXITED(bst) && WEXITSTATUS(bst) == 0,
	       "%s: the %s survived, its memory intact (%s)", how, who,
	       describe(bst, d2, sizeof(d2)));
	tap_ok(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL &&
	       kills1 == kills0 + 1 && strstr(last, want),
	       "%s: the attacker (uid %d, colour 0) was the one OOM-killed (%s)", how, NOBODY,
	       describe(st, d1, sizeof(d1)));
	tap_ok(cons1 > cons0, "%s: the kill was constrained to the colour "
	       "(CONSTRAINT_PAGE_COLOR lines %d -> %d)", how, cons0, cons1);
}

int main(void)
{
	size_t per, n, by_pages, wide_pages, total;
	int orig, trouble;
	char wide[32];

	pc_init(13);
	if (geteuid() != 0) {
		tap_diag("must run as root (the attacker drops to uid %d)", NOBODY);
		return tap_finish();
	}
	total = (size_t)sysconf(_SC_PHYS_PAGES);
	per = total / pc_nr_colors;
	n = 2 * per;
	by_pages = (200UL << 20) / pc_page_size;
	if (by_pages > total / 5)
		by_pages = total / 5;
	tap_diag("about %zu pages per colour; the attacker touches %zu bound to colour 0, "
		 "the bystander holds %zu", per, n, by_pages);
	trouble = pc_dmesg_trouble();
	if (write_file("/proc/self/oom_score_adj", "-1000"))
		tap_diag("cannot make the test process OOM-immune: %s", strerror(errno));
	orig = read_int(SYSCTL);
	if (orig >= 0 && write_file(SYSCTL, "0"))
		tap_diag("cannot set %s to 0", SYSCTL);
	if (orig < 0)
		tap_diag("no %s: colour policies are unprivileged on this kernel", SYSCTL);
	pc_settle();

	round_(0, by_pages, n, NULL);
	pc_settle();
	round_(1, by_pages, n, NULL);
	/*
	 * Root bound to half the colours holding 64 MiB (a twentieth of
	 * memory at most): 1 / (nr_colors / 2) of it on colour 0, a quarter of
	 * colour 0's share at 16 colours and less at more, so the attacker
	 * holds more of colour 0 than the binder when it runs out.
	 */
	snprintf(wide, sizeof(wide), "0-%d", pc_nr_colors / 2 - 1);
	wide_pages = (64UL << 20) / pc_page_size;
	if (wide_pages > total / 20)
		wide_pages = total / 20;
	pc_settle();
	round_(0, wide_pages, n, wide);

	if (orig >= 0) {
		char buf[16];

		snprintf(buf, sizeof(buf), "%d", orig);
		write_file(SYSCTL, buf);
	}
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
