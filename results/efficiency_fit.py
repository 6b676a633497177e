"""The compute-efficiency fit shared by the training reproductions (results/megatron-sc21-table1,
results/nemo-24.07-h100).

Per row, the simulated iteration time as a function of the tensor-core efficiency x and the HBM
efficiency y is T(x, y) = C/x + M/y + R: C is the time in FLOP-bound ops on the critical path, M the
time in memory-bound ops, R the rest (communication, bubbles). It is exact for ops that are purely
compute- or memory-bound and an approximation for the few roofline ops that switch side; three
simulator runs give C, M and R. The fit is a grid search over (x, y) on the rows it may see.
"""


def interpolate(time_at, x0, x1, y0, y1=None):
    """(C, M, R) from runs at (x0, y0), (x1, y0) and, unless y1 is None (y fixed: M = 0, folded into R),
    (x0, y1). time_at(x, y) runs the simulator and returns the iteration time in seconds."""
    t00, t10 = time_at(x0, y0), time_at(x1, y0)
    c = (t00 - t10) / (1 / x0 - 1 / x1)
    m = 0.0 if y1 is None else (t00 - time_at(x0, y1)) / (1 / y0 - 1 / y1)
    return c, m, t00 - c / x0 - m / y0


def grid_fit(err, xs, ys, refine_x, refine_y):
    """(x, y) minimising err(x, y): a coarse grid over xs x ys (values in thousandths), then steps of
    1e-4 within +-refine_x / +-refine_y of the coarse optimum (0 < x, y <= 1)."""
    best = None
    for i in xs:
        for j in ys:
            x, y = i / 1000, j / 1000
            e = err(x, y)
            if best is None or e < best[0]:
                best = (e, x, y)
    _, bx, by = best
    for i in range(-refine_x, refine_x + 1):
        for j in range(-refine_y, refine_y + 1):
            x, y = bx + i / 10000, by + j / 10000
            if 0 < x <= 1 and 0 < y <= 1:
                e = err(x, y)
                if e < best[0]:
                    best = (e, x, y)
    return best[1], best[2]
