// SPDX-License-Identifier: GPL-2.0
/*
 * A colour policy is a privilege (issue 29 item 4): binding to a few
 * colours tells a task physical address bits of its frames and lets it
 * exhaust colours others use.
 *
 * - vm.page_color_restrict exists and is 1 by default;
 * - an unprivileged attacker (uid/gid 65534, no capabilities) gets EPERM
 *   from set_color_policy and color_mbind with a bind or preferred policy
 *   under the default, while going back to COLOR_MODE_DEFAULT works;
 * - the same uid with CAP_SYS_NICE alone succeeds, and fails again at 2
 *   (CAP_SYS_ADMIN); with the sysctl at 0 the attacker succeeds;
 * - the attacker's bad arguments are EINVAL/EFAULT before the privilege
 *   is looked at (issue 51: nothing is allocated for a refused call);
 * - the attacker cannot lower the sysctl;
 * - a task default set before a set-user-ID-root exec is gone in the new
 *   program (get_color_policy says COLOR_MODE_DEFAULT), while an ordinary
 *   exec keeps it; an uncoloured root bystander is not affected.
 *
 * Runs as root; attackers are forked children.  The sysctl is put back
 * to its value at the start.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define NOBODY		65534
#define SYSCTL		"/proc/sys/vm/page_color_restrict"
#define HELPER_DIR	"/pc_suid"
#define NPAGES		8

static pagecolor_set_t setA;

static int read_sysctl(void)
{
	FILE *f = fopen(SYSCTL, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* 0 on success, else errno. */
static int write_sysctl(int v)
{
	char buf[16];
	int fd = open(SYSCTL, O_WRONLY), n, err = 0;

	if (fd < 0)
		return errno;
	n = snprintf(buf, sizeof(buf), "%d\n", v);
	if (write(fd, buf, n) != n)
		err = errno ? errno : EIO;
	close(fd);
	return err;
}

/* Drop to uid/gid 65534; keep CAP_SYS_NICE (only) when asked. */
static void drop_privileges(int keep_nice)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (keep_nice && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
		_exit(100);
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)) {
		printf("# dropping to uid %d: %s\n", NOBODY, strerror(errno));
		_exit(100);
	}
	memset(data, 0, sizeof(data));
	if (keep_nice) {
		data[0].effective = data[0].permitted = 1u << CAP_SYS_NICE;
		if (syscall(SYS_capset, &hdr, data)) {
			printf("# capset: %s\n", strerror(errno));
			_exit(100);
		}
	}
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

/*
 * As the attacker: try a bind task default, a preferred one, color_mbind
 * of a private range, then go back to the default.  Exit status: bit 0
 * set_color_policy(BIND) ok, bit 1 PREFERRED ok, bit 2 color_mbind ok,
 * bit 3 back to DEFAULT ok, bit 4 some call failed with an errno other
 * than EPERM; 100+ setup errors.
 */
static int attacker(int keep_nice)
{
	char *p;
	int r = 0;

	drop_privileges(keep_nice);
	p = mmap(NULL, NPAGES * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 101;
	if (pagecolor_set_policy(COLOR_MODE_BIND, &setA) == 0)
		r |= 1;
	else if (errno != EPERM)
		r |= 16;
	if (pagecolor_set_policy(COLOR_MODE_PREFERRED, &setA) == 0)
		r |= 2;
	else if (errno != EPERM)
		r |= 16;
	if (pagecolor_mbind(p, NPAGES * pc_page_size, COLOR_MODE_BIND, &setA, 0) == 0)
		r |= 4;
	else if (errno != EPERM)
		r |= 16;
	if (pagecolor_set_policy(COLOR_MODE_DEFAULT, NULL) == 0)
		r |= 8;
	else
		r |= 16;
	return r;
}

/*
 * Issue 51: the privilege is checked after the arguments and before
 * anything is allocated.  As the attacker: a colour past nr_colors is
 * EINVAL, an unreadable mask EFAULT, a valid mask EPERM (set_color_policy
 * and color_mbind).  Exit status: a bit per call that answered otherwise.
 */
static int attacker_order(void)
{
	unsigned long bad[PAGECOLOR_SET_LONGS] = { 0 };
	int r = 0;
	char *p;

	drop_privileges(0);
	p = mmap(NULL, pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 100;
	bad[pc_nr_colors / (8 * sizeof(long))] |= 1UL << (pc_nr_colors % (8 * sizeof(long)));
	if (!(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, bad, pc_nr_colors + 1) == -1 &&
	      errno == EINVAL))
		r |= 1;
	if (!(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, (void *)8, pc_nr_colors) == -1 &&
	      errno == EFAULT))
		r |= 2;
	if (!(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, setA.bits, pc_nr_colors) == -1 &&
	      errno == EPERM))
		r |= 4;
	if (!(pagecolor_sys_color_mbind((unsigned long)p, pc_page_size, COLOR_MODE_BIND, bad,
					pc_nr_colors + 1, 0) == -1 && errno == EINVAL))
		r |= 8;
	if (!(pagecolor_sys_color_mbind((unsigned long)p, pc_page_size, COLOR_MODE_BIND,
					setA.bits, pc_nr_colors, 0) == -1 && errno == EPERM))
		r |= 16;
	return r;
}

static int run_attacker(int keep_nice)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(attacker(keep_nice));
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* The attacker tries to lower the sysctl: exit 0 when refused. */
static int attacker_lowers_sysctl(void)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		drop_privileges(1);
		_exit(write_sysctl(0) == 0 ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Helper mode: report the task default policy as the exit status. */
static int report_policy(void)
{
	int mode = -1;

	if (pagecolor_get_policy(&mode, NULL, NULL, 0))
		return 90;
	return mode;	/* COLOR_MODE_DEFAULT 0, BIND 1, PREFERRED 2 */
}

/* Copy /proc/self/exe to path with mode (and root ownership). */
static int install_helper(const char *path, mode_t mode)
{
	char buf[65536];
	int in, out;
	ssize_t n;

	in = open("/proc/self/exe", O_RDONLY);
	if (in < 0)
		return -1;
	unlink(path);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n) {
			n = -1;
			break;
		}
	close(in);
	if (close(out) || n < 0 || chown(path, 0, 0) || chmod(path, mode))
		return -1;
	return 0;
}

/*
 * As the attacker (sysctl 0, so it may bind), set a bind task default and
 * exec @path; the exit status is the new program's policy mode.
 */
static int exec_with_policy(const char *path)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		drop_privileges(0);
		if (pagecolor_set_policy(COLOR_MODE_BIND, &setA))
			_exit(101);
		execl(path, path, "--report-policy", (char *)NULL);
		_exit(102);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	char buf[64];
	int orig, st, mode = -1;
	pid_t by;

	if (argc > 1 && !strcmp(argv[1], "--report-policy"))
		return report_policy();

	pc_init(15);
	if (geteuid() != 0) {
		tap_diag("must run as root (the attacker is a child that drops to uid %d)", NOBODY);
		return tap_finish();
	}
	snprintf(buf, sizeof(buf), "0-%d", pc_nr_colors / 4 - 1);
	setA = pc_set(buf);

	/* an uncoloured root bystander beside the attacker */
	by = fork();
	if (by == 0) {
		pause();
		_exit(0);
	}

	orig = read_sysctl();
	tap_ok(orig == 1, "%s exists and is 1 by default (%d)", SYSCTL, orig);

	st = run_attacker(0);
	tap_ok(st >= 0 && !(st & 1) && !(st & 16),
	       "uid %d: set_color_policy(BIND) -> EPERM under the default (status %d)", NOBODY, st);
	tap_ok(st >= 0 && !(st & 2) && !(st & 16),
	       "uid %d: set_color_policy(PREFERRED) -> EPERM under the default (status %d)",
	       NOBODY, st);
	tap_ok(st >= 0 && !(st & 4) && !(st & 16),
	       "uid %d: color_mbind(BIND) -> EPERM under the default (status %d)", NOBODY, st);
	tap_ok(st >= 0 && (st & 8), "uid %d: going back to COLOR_MODE_DEFAULT is allowed (status %d)",
	       NOBODY, st);

	{
		pid_t pid = fork();
		int ws = 0;

		if (pid == 0)
			_exit(attacker_order());
		st = pid > 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) ?
		     WEXITSTATUS(ws) : -1;
	}
	tap_ok(st == 0, "uid %d: bad arguments are EINVAL/EFAULT before the privilege, "
	       "a valid call EPERM (status %d: a bit per call answering otherwise)", NOBODY, st);

	st = run_attacker(1);
	tap_ok(st == 15, "uid %d with CAP_SYS_NICE only: all calls succeed (status %d)", NOBODY, st);

	st = attacker_lowers_sysctl();
	tap_ok(st == 0 && read_sysctl() == orig,
	       "uid %d (with CAP_SYS_NICE) cannot lower the sysctl (status %d)", NOBODY, st);

	st = write_sysctl(2);
	tap_ok(st == 0 && run_attacker(1) == 8,
	       "sysctl 2: CAP_SYS_NICE is not enough (EPERM)");
	tap_ok(st == 0 && pagecolor_set_policy(COLOR_MODE_BIND, &setA) == 0 &&
	       pagecolor_set_policy(COLOR_MODE_DEFAULT, NULL) == 0,
	       "sysctl 2: root (CAP_SYS_ADMIN) may bind");

	st = write_sysctl(0);
	tap_ok(st == 0 && run_attacker(0) == 15,
	       "sysctl 0: uid %d without capabilities may bind", NOBODY);

	/* set-user-ID exec drops the task default; an ordinary exec keeps it */
	mkdir(HELPER_DIR, 0755);
	chmod(HELPER_DIR, 0755);
	if (install_helper(HELPER_DIR "/suid", 04755) ||
	    install_helper(HELPER_DIR "/plain", 0755)) {
		tap_diag("installing the helpers: %s", strerror(errno));
	}
	st = exec_with_policy(HELPER_DIR "/plain");
	tap_ok(st == COLOR_MODE_BIND,
	       "uid %d: an ordinary exec keeps the bind task default (mode %d)", NOBODY, st);
	st = exec_with_policy(HELPER_DIR "/suid");
	tap_ok(st == COLOR_MODE_DEFAULT,
	       "uid %d: a set-user-ID-root program starts with no colour policy (mode %d)",
	       NOBODY, st);
	unlink(HELPER_DIR "/suid");
	unlink(HELPER_DIR "/plain");
	rmdir(HELPER_DIR);

	if (orig >= 0)
		write_sysctl(orig);
	tap_ok(orig < 0 || read_sysctl() == orig, "sysctl back to %d", orig);

	tap_ok(kill(by, 0) == 0 && pagecolor_get_policy(&mode, NULL, NULL, 0) == 0 &&
	       mode == COLOR_MODE_DEFAULT,
	       "the uncoloured root bystander is alive, root's own policy is the default");
	kill(by, SIGKILL);
	waitpid(by, NULL, 0);
	return tap_finish();
}
