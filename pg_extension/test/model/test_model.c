/*
 * Unit test of model.c: the predictive policy's admission rule with a fixed
 * matrix and fixed run-time predictions, and how synthetic completions move
 * the learned matrix.  Prints TAP.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../model.h"
#include "../tap.h"

enum
{
	S, M, W						/* strong, moderate, weak */
};


static int
near(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b);
}

/* The machine of the paper's Table 1: strong beside strong hurts, weak does not. */
static const double paper[3][3] = {
	{2.0, 1.5, 1.05},
	{1.5, 1.3, 1.05},
	{1.05, 1.05, 1.02},
};
static const double none[3][3] = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};

static void
test_rule(void)
{
	ModelQuery running[2] = {{0}};
	ModelQuery waiting[4] = {{0}};

	/* nothing runs: every waiter is compatible, the longest goes first */
	waiting[0] = (ModelQuery) {S, 5, 1, 1};
	waiting[1] = (ModelQuery) {W, 9, 2, 1};
	waiting[2] = (ModelQuery) {S, 7, 3, 1};
	ok(model_pick(waiting, 3, running, 0, paper, 2, 0.10) == 1,
	   "empty gate: the longest waiter first");

	/* a strong query runs: the weak waiter is compatible, the strong is not */
	running[0] = (ModelQuery) {S, 10, 0, 1};
	waiting[0] = (ModelQuery) {S, 9, 1, 1};
	waiting[1] = (ModelQuery) {W, 5, 2, 1};
	ok(near(model_added_seconds(&waiting[1], running, 1, paper), 0.5, 1e-9),
	   "added work of weak beside strong: (0.05 + 0.05) x 5 s");
	ok(model_pick(waiting, 2, running, 1, paper, 1, 0.10) == 1,
	   "strong running: the compatible weak waiter, though shorter");

	/* among compatible waiters, the longest first (no long query left alone) */
	waiting[0] = (ModelQuery) {W, 3, 1, 1};
	waiting[1] = (ModelQuery) {W, 8, 2, 1};
	waiting[2] = (ModelQuery) {S, 20, 3, 1};
	ok(model_pick(waiting, 3, running, 1, paper, 1, 0.10) == 1,
	   "among compatible waiters the longest");

	/* none compatible: the least harmful, never an idle slot */
	waiting[0] = (ModelQuery) {S, 4, 1, 1};
	waiting[1] = (ModelQuery) {M, 4, 2, 1};
	ok(model_pick(waiting, 2, running, 1, paper, 1, 0.10) == 1,
	   "none compatible: the least harm (moderate beside strong), still admitted");

	/* no interference at all: pure longest-first, ties by arrival */
	waiting[0] = (ModelQuery) {S, 4, 7, 1};
	waiting[1] = (ModelQuery) {S, 4, 5, 1};
	ok(model_pick(waiting, 2, running, 1, none, 1, 0.10) == 1,
	   "equal waiters: the earlier arrival");

	/* slots: a query needing more slots than are free waits */
	waiting[0] = (ModelQuery) {W, 9, 1, 3};
	waiting[1] = (ModelQuery) {W, 2, 2, 1};
	ok(model_pick(waiting, 2, running, 1, paper, 1, 0.10) == 1,
	   "a waiter that does not fit is passed over");
	ok(model_pick(waiting, 1, running, 1, paper, 1, 0.10) == -1,
	   "nothing fits: nobody admitted");
	ok(model_pick(waiting, 0, running, 1, paper, 1, 0.10) == -1,
	   "nobody waits: nobody admitted");

	/* equal lengths, both compatible: the less harmful pairing */
	running[0] = (ModelQuery) {W, 10, 0, 1};
	waiting[0] = (ModelQuery) {S, 6, 1, 1};
	waiting[1] = (ModelQuery) {W, 6, 2, 1};
	ok(model_pick(waiting, 2, running, 1, paper, 1, 0.10) == 1,
	   "weak running, equal lengths: weak beside weak (1.02) before strong (1.05)");
}

static void
test_learning(void)
{
	ModelCell cells[3][3];
	double		m[3][3];
	double		overlap[3] = {0, 0, 1.0};
	double		before;
	int			i;

	memset(cells, 0, sizeof(cells));
	model_matrix(cells, m);
	ok(m[S][W] == 1.0 && m[W][S] == 1.0, "an empty matrix predicts no interference");

	ok(model_learn_completion(cells, S, 1.3, (double[3]) {0, 0, 0}) == 1.0 &&
	   cells[S][S].samples + cells[S][M].samples + cells[S][W].samples == 0,
	   "a run alone teaches no cell");

	for (i = 0; i < 30; i++)
		model_learn_completion(cells, S, 1.5, overlap);
	model_matrix(cells, m);
	ok(near(m[S][W], 1.5, 0.01), "30 runs of strong beside weak at 1.5x: the cell says 1.5");
	ok(cells[S][W].samples == 30, "and counts 30 samples");
	ok(m[W][S] == 1.0 && m[S][S] == 1.0, "the other cells are untouched");

	before = m[S][W];
	model_learn_completion(cells, S, 10.0, overlap);
	model_matrix(cells, m);
	ok(fabs(log(m[S][W] / before)) < MODEL_CLIP / MODEL_MEMORY + 1e-9,
	   "one 10x outlier moves it by at most the clipped step");

	for (i = 0; i < 40; i++)
		model_learn_completion(cells, S, 1.2, overlap);
	model_matrix(cells, m);
	ok(near(m[S][W], 1.2, 0.05), "the machine changes to 1.2x: after 40 runs the cell follows");

	/* half the run beside a weak query: the excess belongs to that half */
	memset(cells, 0, sizeof(cells));
	for (i = 0; i < 30; i++)
		model_learn_completion(cells, M, 1.25, (double[3]) {0, 0, 0.5});
	model_matrix(cells, m);
	ok(near(m[M][W], 1.5, 0.01), "1.25x with half the run overlapped: the cell says 1.5");

	/* two co-run classes: a known one is discounted from the other */
	for (i = 0; i < 30; i++)
		model_learn_completion(cells, M, 1.25 + 0.5 * 0.4, (double[3]) {0.5, 0, 0.5});
	model_matrix(cells, m);
	ok(near(m[M][S], 1.4, 0.03), "beside weak and strong: strong gets what weak does not explain");

	/* learned from an empty matrix, the rule pairs as the truth says */
	memset(cells, 0, sizeof(cells));
	for (i = 0; i < 25; i++)
	{
		model_learn_completion(cells, S, 1.9, (double[3]) {1, 0, 0});
		model_learn_completion(cells, S, 1.05, (double[3]) {0, 0, 1});
		model_learn_completion(cells, W, 1.05, (double[3]) {1, 0, 0});
		model_learn_completion(cells, W, 1.3, (double[3]) {0, 0, 1});
	}
	model_matrix(cells, m);
	{
		ModelQuery running[1] = {{S, 10, 0, 1}};
		ModelQuery waiting[2] = {{S, 5, 1, 1}, {W, 5, 2, 1}};

		ok(model_pick(waiting, 2, running, 1, m, 1, 0.10) == 1,
		   "after 100 synthetic completions the learned matrix pairs strong with weak");
	}
}

/* A domain with `free` slots and s, m, w queries of each class running. */
static ModelDomain
domain(int free, int s, int m, int w)
{
	ModelDomain d = {free, {s, m, w}};

	return d;
}

static void
test_placement(void)
{
	ModelDomain d[8];
	int			i;

	/* one domain, as on a machine with one LLC: it, when there is room */
	d[0] = domain(2, 0, 0, 0);
	ok(model_place(d, 1, S, 1, paper) == 0, "one domain: the query goes there");
	d[0] = domain(0, 1, 0, 1);
	ok(model_place(d, 1, S, 1, paper) == -1, "one full domain: no room, -1");
	d[0] = domain(1, 1, 0, 0);
	ok(model_place(d, 1, S, 2, paper) == -1, "a query needing more slots than are free waits");

	/* two domains: a strong query goes away from the strong one running */
	d[0] = domain(1, 1, 0, 0);
	d[1] = domain(1, 0, 0, 1);
	ok(model_place(d, 2, S, 1, paper) == 1, "strong beside weak rather than beside strong (matrix)");
	ok(model_place(d, 2, W, 1, paper) == 1, "weak beside weak rather than beside strong (matrix)");

	/* nothing learned (all 1.0): cache-hungry queries spread, streams pack */
	d[0] = domain(1, 1, 0, 0);
	d[1] = domain(2, 0, 0, 0);
	ok(model_place(d, 2, S, 1, none) == 1, "no matrix: strong avoids the domain with a strong query");
	d[0] = domain(2, 0, 0, 1);
	d[1] = domain(3, 0, 0, 0);
	ok(model_place(d, 2, W, 1, none) == 0, "no matrix: weak joins the weak query (streams together)");
	ok(model_place(d, 2, M, 1, none) == 1, "no matrix: moderate takes the emptier domain");
	/* two domains of two, a weak query running: a second weak one that
	 * filled its domain would force the two hash joins after it together
	 * (seen in the simulator's guest, llcsim-compare) */
	d[0] = domain(1, 0, 0, 1);
	d[1] = domain(2, 0, 0, 0);
	ok(model_place(d, 2, W, 1, none) == 1, "no matrix: weak does not take a domain's last slot to pack");
	d[0] = domain(1, 0, 1, 0);
	d[1] = domain(1, 0, 0, 1);
	ok(model_place(d, 2, W, 1, none) == 1, "no matrix: weak avoids the cache-hungry query");

	/* eight domains of two: the first empty one after full and busy ones */
	for (i = 0; i < 8; i++)
		d[i] = domain(0, 1, 0, 1);
	d[5] = domain(2, 0, 0, 0);
	d[6] = domain(1, 0, 0, 1);
	ok(model_place(d, 8, S, 1, paper) == 5, "eight domains: strong takes the empty one");
	ok(model_place(d, 8, S, 2, paper) == 5, "eight domains: a query with a worker needs two free slots");
	d[5] = domain(1, 0, 0, 1);
	ok(model_place(d, 8, S, 2, paper) == -1, "eight domains, none with two free slots: -1");
	ok(model_place(d, 8, W, 1, paper) == 5, "eight domains, weak: the lowest of equal domains");

	/* uneven domains (6 + 2 CPUs): room decides before the matrix */
	d[0] = domain(5, 1, 0, 0);
	d[1] = domain(0, 0, 0, 2);
	ok(model_place(d, 2, W, 1, paper) == 0, "uneven: the full small domain is skipped");
}

/* Each waiter judged by its own matrix (its role's learned one), issue 48. */
static void
test_own_matrix(void)
{
	ModelQuery running[1] = {{S, 10, 0, 1}};
	ModelQuery waiting[2] = {{0}};

	/* by the shared matrix the strong waiter is incompatible beside a strong query ... */
	waiting[0] = (ModelQuery) {S, 9, 1, 1};
	waiting[1] = (ModelQuery) {W, 5, 2, 1};
	ok(model_pick(waiting, 2, running, 1, paper, 1, 0.10) == 1,
	   "shared matrix: the weak waiter beside a strong query");
	/* ... by its own role's matrix (no interference learned) it is compatible and longer */
	waiting[0].m = none;
	ok(model_pick(waiting, 2, running, 1, paper, 1, 0.10) == 0,
	   "a waiter's own matrix: its role's co-runs decide for it alone");
	/* and another waiter's matrix changes nothing for it */
	waiting[0].m = NULL;
	waiting[1].m = none;
	ok(model_pick(waiting, 2, running, 1, paper, 1, 0.10) == 1,
	   "another waiter's matrix leaves this one's judged by the shared one");
}

int
main(void)
{
	test_rule();
	test_own_matrix();
	test_learning();
	test_placement();
	return tap_done();
}
