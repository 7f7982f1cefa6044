/*-------------------------------------------------------------------------
 *
 * model.c
 *		The predictive scheduler's rule and learning (see model.h).
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>

#include "model.h"

static double
min_d(double a, double b)
{
	return a < b ? a : b;
}

double
model_added_seconds(const ModelQuery *q, const ModelQuery *running, int nrunning,
					const double m[MODEL_CLASSES][MODEL_CLASSES])
{
	double		added = 0;
	int			i;

	for (i = 0; i < nrunning; i++)
	{
		const ModelQuery *r = &running[i];
		double		together = min_d(q->seconds, r->seconds);

		added += (m[q->cls][r->cls] - 1.0) * together;
		added += (m[r->cls][q->cls] - 1.0) * together;
	}
	return added;
}

/* Is a better than b?  Both compatible: longer first; else less harm first. */
static int
better(const ModelQuery *a, double harm_a, const ModelQuery *b, double harm_b,
	   int compatible)
{
	if (compatible)
	{
		if (a->seconds != b->seconds)
			return a->seconds > b->seconds;
		if (harm_a != harm_b)
			return harm_a < harm_b;
	}
	else
	{
		if (harm_a != harm_b)
			return harm_a < harm_b;
		if (a->seconds != b->seconds)
			return a->seconds > b->seconds;
	}
	return a->seq < b->seq;
}

int
model_pick(const ModelQuery *waiting, int nwaiting,
		   const ModelQuery *running, int nrunning,
		   const double m[MODEL_CLASSES][MODEL_CLASSES],
		   int free_slots, double compatible_limit)
{
	int			best = -1,
				best_compatible = 0,
				i;
	double		best_harm = 0;

	for (i = 0; i < nwaiting; i++)
	{
		const ModelQuery *q = &waiting[i];
		double		harm;
		int			compatible;

		if (q->slots > free_slots)
			continue;
		/* harm relative to the query's own time; a zero-time query harms nothing */
		harm = q->seconds > 0 ?
			model_added_seconds(q, running, nrunning, q->m ? q->m : m) / q->seconds : 0;
		compatible = harm <= compatible_limit;
		if (best < 0 ||
			(compatible && !best_compatible) ||
			(compatible == best_compatible &&
			 better(q, harm, &waiting[best], best_harm, compatible)))
		{
			best = i;
			best_harm = harm;
			best_compatible = compatible;
		}
	}
	return best;
}

int
model_place(const ModelDomain *domains, int ndomains, int cls, int slots,
			const double m[MODEL_CLASSES][MODEL_CLASSES])
{
	const int	weak = MODEL_CLASSES - 1;
	int			best = -1,
				i,
				c;
	double		best_harm = 0;

	for (i = 0; i < ndomains; i++)
	{
		const ModelDomain *d = &domains[i];
		double		harm = 0;
		int			hungry,
					best_hungry;
		int			pack,
					best_pack;

		if (d->free_slots < slots)
			continue;
		for (c = 0; c < MODEL_CLASSES; c++)
			harm += d->running[c] * ((m[cls][c] - 1.0) + (m[c][cls] - 1.0));
		if (best < 0)
		{
			best = i;
			best_harm = harm;
			continue;
		}
		if (fabs(harm - best_harm) > 1e-9)
		{
			if (harm < best_harm)
			{
				best = i;
				best_harm = harm;
			}
			continue;
		}
		hungry = d->running[0] + d->running[1];
		best_hungry = domains[best].running[0] + domains[best].running[1];
		if (hungry != best_hungry)
		{
			if (hungry < best_hungry)
				best = i;
			continue;
		}
		/*
		 * A stream joins the other streams while their domain keeps a free
		 * slot: filling it would leave a cache-hungry query that comes next
		 * only the domains with hungry queries in them.
		 */
		pack = cls != weak ? d->free_slots :
			d->free_slots > slots ? d->running[weak] : -1;
		best_pack = cls != weak ? domains[best].free_slots :
			domains[best].free_slots > slots ? domains[best].running[weak] : -1;
		if (pack > best_pack)
			best = i;
	}
	return best;
}

void
model_cell_add(ModelCell *cell, double ratio, double weight)
{
	double		x;
	double		total;

	if (!(ratio > 0) || !(weight > 0) || !isfinite(ratio))
		return;
	x = log(ratio);
	if (cell->weight > 0)
	{
		/* robust: an outlier pulls as if it were MODEL_CLIP away */
		if (x > cell->log_estimate + MODEL_CLIP)
			x = cell->log_estimate + MODEL_CLIP;
		else if (x < cell->log_estimate - MODEL_CLIP)
			x = cell->log_estimate - MODEL_CLIP;
	}
	total = cell->weight + weight;
	cell->log_estimate += (x - cell->log_estimate) * weight / total;
	cell->weight = total > MODEL_MEMORY ? MODEL_MEMORY : total;
	cell->samples++;
}

double
model_cell_value(const ModelCell *cell, double prior)
{
	return cell->weight > 0 ? exp(cell->log_estimate) : prior;
}

void
model_matrix(const ModelCell cells[MODEL_CLASSES][MODEL_CLASSES],
			 double m[MODEL_CLASSES][MODEL_CLASSES])
{
	int			t,
				c;

	for (t = 0; t < MODEL_CLASSES; t++)
		for (c = 0; c < MODEL_CLASSES; c++)
			m[t][c] = model_cell_value(&cells[t][c], 1.0);
}

double
model_learn_completion(ModelCell cells[MODEL_CLASSES][MODEL_CLASSES],
					   int cls, double ratio, const double overlap[MODEL_CLASSES])
{
	double		m[MODEL_CLASSES][MODEL_CLASSES];
	double		predicted = 1.0;
	int			c,
				o;

	model_matrix(cells, m);
	for (c = 0; c < MODEL_CLASSES; c++)
		predicted += overlap[c] * (m[cls][c] - 1.0);
	if (!(ratio > 0) || !isfinite(ratio))
		return predicted;
	for (c = 0; c < MODEL_CLASSES; c++)
	{
		double		others = 0;
		double		implied;

		if (!(overlap[c] > 0))
			continue;
		for (o = 0; o < MODEL_CLASSES; o++)
			if (o != c)
				others += overlap[o] * (m[cls][o] - 1.0);
		/* the slowdown this cell must have for the run to take `ratio` */
		implied = 1.0 + (ratio - 1.0 - others) / overlap[c];
		if (implied < 0.5)
			implied = 0.5;
		else if (implied > 20.0)
			implied = 20.0;
		model_cell_add(&cells[cls][c], implied, overlap[c] > 1.0 ? 1.0 : overlap[c]);
	}
	return predicted;
}
