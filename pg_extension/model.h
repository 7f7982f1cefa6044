/*-------------------------------------------------------------------------
 *
 * model.h
 *		The predictive scheduler's arithmetic, in plain C (no PostgreSQL
 *		headers), so that its rules are unit-tested on their own
 *		(test/model): which waiting query to admit, and how a finished
 *		query's measured time moves the learned interference matrix.
 *
 * Classes are 0 strong, 1 moderate, 2 weak (MccdbLocalityClass).  A matrix
 * cell m[t][c] is the slowdown of a query of class t while one of class c
 * runs beside it (co-run time / alone time).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_MODEL_H
#define MCCDB_MODEL_H

#define MODEL_CLASSES 3

/* A waiting query, or a running one (then seconds = predicted remaining). */
typedef struct ModelQuery
{
	int			cls;
	double		seconds;		/* predicted run time alone */
	long		seq;			/* arrival order, for ties */
	int			slots;
	/* a waiter's own matrix (its role's), or NULL: model_pick's m */
	const double (*m)[MODEL_CLASSES];
} ModelQuery;

/*
 * Predicted seconds of extra work if q starts now beside the running set:
 * its own slowdown while each runs beside it, and theirs.
 */
extern double model_added_seconds(const ModelQuery *q, const ModelQuery *running,
								  int nrunning, const double m[MODEL_CLASSES][MODEL_CLASSES]);

/*
 * The predictive policy: the waiter to admit into free_slots now, or -1
 * when none fits.  Work-conserving: whenever a waiter fits, one is chosen.
 * Among the compatible waiters (added work at most compatible_limit of
 * their own run time) the longest goes first, so that a batch does not end
 * with one long query alone; when none is compatible, the least harmful.
 */
extern int	model_pick(const ModelQuery *waiting, int nwaiting,
					   const ModelQuery *running, int nrunning,
					   const double m[MODEL_CLASSES][MODEL_CLASSES],
					   int free_slots, double compatible_limit);

/* An LLC domain as placement sees it. */
typedef struct ModelDomain
{
	int			free_slots;
	int			running[MODEL_CLASSES];	/* queries of each class running in it */
} ModelDomain;

/*
 * The domain a query of class cls needing `slots` goes to, or -1 when no
 * domain has room.  The least predicted interference with the domain's
 * running queries (m, both ways) first; then the fewest cache-hungry
 * (strong or moderate) queries; then a cache-hungry query takes the domain
 * with the most free slots (spread out) and a weak one the domain with the
 * most weak queries (streams together); then the lowest index.
 */
extern int	model_place(const ModelDomain *domains, int ndomains, int cls, int slots,
						const double m[MODEL_CLASSES][MODEL_CLASSES]);

/*
 * One learned estimate: a weighted mean of log(ratio), robust to outliers
 * (a sample further than MODEL_CLIP from the estimate counts as if at that
 * distance) and forgetting (the weight is capped at MODEL_MEMORY samples,
 * so it follows a machine that changes).
 */
typedef struct ModelCell
{
	double		log_estimate;
	double		weight;			/* capped at MODEL_MEMORY */
	long		samples;		/* how many fed it, ever */
} ModelCell;

#define MODEL_CLIP 0.5			/* in log space: a factor of 1.65 */
#define MODEL_MEMORY 20.0

extern void model_cell_add(ModelCell *cell, double ratio, double weight);
extern double model_cell_value(const ModelCell *cell, double prior);

/*
 * A finished query of class cls ran `ratio` times its predicted alone
 * time; overlap[c] is the fraction of its run that a query of class c ran
 * beside it (summed over co-runners).  Each co-run class's cell learns the
 * slowdown this implies, given the other cells; weight = its overlap.
 * Returns the slowdown the matrix predicted for this run (before learning),
 * with which the caller corrects the query's alone time.
 */
extern double model_learn_completion(ModelCell cells[MODEL_CLASSES][MODEL_CLASSES],
									 int cls, double ratio,
									 const double overlap[MODEL_CLASSES]);

/* The matrix the cells give (1.0 where nothing was learned). */
extern void model_matrix(const ModelCell cells[MODEL_CLASSES][MODEL_CLASSES],
						 double m[MODEL_CLASSES][MODEL_CLASSES]);

#endif							/* MCCDB_MODEL_H */
