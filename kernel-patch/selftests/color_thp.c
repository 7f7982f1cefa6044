// SPDX-License-Identifier: GPL-2.0
/*
 * Transparent huge pages and colour policies.  A huge page spans every
 * colour, so while a thread has a default policy no VMA of its process
 * gets THP; when the last default policy goes, THP comes back, and a new
 * mm (fork, exec) is coloured only if the task it is made for has a
 * default policy.  Eligibility is read from the THPeligible line of
 * /proc/self/smaps for a fresh MADV_HUGEPAGE mapping.
 *
 * The mark goes when the last task with a default policy stops using
 * the mm, and other processes sharing it count (issue 29 item 8): a
 * thread that had the only policy exits, and THP comes back; a vfork()
 * child that sets a policy and execs leaves its parent's mm unmarked; a
 * CLONE_VM child that drops its policy leaves the mark of the parent,
 * which still has one.
 */
#include "pc_test.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define MAP_LEN		(4UL << 20)
#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"

/* THPeligible of a fresh MADV_HUGEPAGE mapping: 1, 0, or -1 on error. */
static int thp_eligible(void)
{
	int value;
	char *p = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		printf("# mmap: %s\n", strerror(errno));
		return -1;
	}
	if (madvise(p, MAP_LEN, MADV_HUGEPAGE)) {
		printf("# madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
		munmap(p, MAP_LEN);
		return -1;
	}
	value = (int)pc_smaps_value(p, "THPeligible");
	if (value < 0)
		printf("# no THPeligible line for the VMA at %lx-\n", (unsigned long)p);
	munmap(p, MAP_LEN);
	return value;
}

static int set_policy(int mode)
{
	pagecolor_set_t s = pc_set("0-3");

	return pagecolor_set_policy(mode, mode == COLOR_MODE_DEFAULT ? NULL : &s);
}

/* In a child: optionally bind, optionally go back to default, then exec
 * ourselves to report THPeligible; returns that child's exit status. */
static int exec_child(const char *self, int bind, int unbind)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		if ((bind && set_policy(COLOR_MODE_BIND)) ||
		    (unbind && set_policy(COLOR_MODE_DEFAULT)))
			_exit(100);
		execl(self, self, "--thp-eligible", (char *)NULL);
		_exit(101);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* A thread that sets a bind default policy, reports, waits, exits. */
struct thread_arg {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int state;		/* 1: policy set (or -1: failed), 2: may exit */
};

static void *policy_thread(void *p)
{
	struct thread_arg *a = p;

	pthread_mutex_lock(&a->lock);
	a->state = set_policy(COLOR_MODE_BIND) ? -1 : 1;
	pthread_cond_broadcast(&a->cond);
	while (a->state != 2)
		pthread_cond_wait(&a->cond, &a->lock);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* A CLONE_VM child (not a thread, no vfork): drop the default policy. */
static int drop_policy_child(void *arg)
{
	(void)arg;
	return set_policy(COLOR_MODE_DEFAULT) ? 1 : 0;
}

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t n;
	int st, e, e2;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "--thp-eligible"))
		return thp_eligible() == 1 ? 0 : 1;
	if (argc > 1 && !strcmp(argv[1], "--exit"))
		return 0;

	pc_init(10);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || access(THP_ENABLED, R_OK)) {
		tap_diag("no %s or /proc/self/exe", THP_ENABLED);
		return tap_finish();
	}
	self[n] = '\0';

	e = thp_eligible();
	tap_ok(e == 1, "no policy: a MADV_HUGEPAGE mapping is THP-eligible (%d)", e);
	e = set_policy(COLOR_MODE_BIND) ? -1 : thp_eligible();
	tap_ok(e == 0, "default policy set: not eligible (%d)", e);

	/* a child of a coloured process drops its own policy */
	pid = fork();
	if (pid == 0)
		_exit(set_policy(COLOR_MODE_DEFAULT) ? 100 : thp_eligible() == 1 ? 0 : 1);
	st = -1;
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		st = WEXITSTATUS(st);
	tap_ok(st == 0, "fork: a child that drops its policy gets THP back (status %d)", st);

	e = set_policy(COLOR_MODE_DEFAULT) ? -1 : thp_eligible();
	tap_ok(e == 1, "policy back to default: THP-eligible again (%d)", e);

	st = exec_child(self, 1, 0);
	tap_ok(st == 1, "exec with a default policy: the new image is not eligible (status %d)", st);
	st = exec_child(self, 1, 1);
	tap_ok(st == 0, "exec after dropping the policy: the new image is eligible (status %d)", st);
	st = exec_child(self, 0, 0);
	tap_ok(st == 0, "exec without a policy: eligible (status %d)", st);

	/* a thread with the only default policy exits */
	{
		struct thread_arg a = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
		pthread_t th;

		e = e2 = -1;
		if (!pthread_create(&th, NULL, policy_thread, &a)) {
			pthread_mutex_lock(&a.lock);
			while (!a.state)
				pthread_cond_wait(&a.cond, &a.lock);
			if (a.state == 1)
				e = thp_eligible();
			a.state = 2;
			pthread_cond_broadcast(&a.cond);
			pthread_mutex_unlock(&a.lock);
			pthread_join(th, NULL);
			e2 = thp_eligible();
		}
		tap_ok(e == 0 && e2 == 1, "a thread with the only default policy: not eligible "
		       "while it runs (%d), eligible again after it exits (%d)", e, e2);
	}

	/* a vfork() child sets a policy and execs: the parent's mm stays plain */
	pid = vfork();
	if (pid == 0) {
		if (set_policy(COLOR_MODE_BIND))
			_exit(100);
		execl(self, self, "--exit", (char *)NULL);
		_exit(101);
	}
	st = -1;
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		st = WEXITSTATUS(st);
	e = thp_eligible();
	tap_ok(st == 0 && e == 1, "a vfork() child that set a policy and exec'd leaves "
	       "its parent eligible (child status %d, parent %d)", st, e);

	/* a CLONE_VM child drops its policy: the parent keeps its own */
	{
		static char stack[64 * 1024] __attribute__((aligned(16)));

		e = e2 = -1;
		st = -1;
		if (!set_policy(COLOR_MODE_BIND)) {
			e = thp_eligible();
			pid = clone(drop_policy_child, stack + sizeof(stack),
				    CLONE_VM | SIGCHLD, NULL);
			if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
				st = WEXITSTATUS(st);
			e2 = thp_eligible();
			set_policy(COLOR_MODE_DEFAULT);
		}
		tap_ok(e == 0 && st == 0 && e2 == 0, "a CLONE_VM child that drops its policy "
		       "leaves the parent's mark: not eligible before (%d) and after (%d) "
		       "(child status %d)", e, e2, st);
	}
	return tap_finish();
}
