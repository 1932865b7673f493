"""Kernels written the way numba users write them, with the constructs of issue #20: records,
unpacking, list literals, `*args`, `.flat`, string configuration. Each construct appears in
more than one realistic context; `tests/capture/test_constructs.py` checks every kernel in
every mode against finite differences (`moonlite.testing.check_rule`, second order included).
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np
from numba import literal_unroll
from numba.core.extending import overload_method
from numba.experimental import jitclass, structref


@dataclass(frozen=True)
class ConstructCase:
    name: str
    construct: str
    kernel: Callable
    make_args: Callable  # () -> tuple of arguments
    # checked to second order too (hvp), unless its Hessian costs CI more than it teaches
    second_order: bool = True


# --- records and structured arrays (parameters kept as fields) ------------------------------

BUCKET = np.dtype([("capacity", "f8"), ("k_out", "f8"), ("evap", "f8")])


@numba.njit
def linear_reservoirs(rain, params):
    """A chain of linear reservoirs (a hydrology model), parameters in a structured array read
    as p[i]['field']; differentiated in the rainfall series and in the parameters."""
    storage = np.zeros(params.shape[0])
    runoff = 0.0
    for t in range(rain.shape[0]):
        inflow = rain[t]
        for i in range(params.shape[0]):
            s = storage[i] + inflow
            spill = max(s - params[i]["capacity"], 0.0)
            out = params[i]["k_out"] * (s - spill) + spill
            storage[i] = (s - out) * (1.0 - params[i]["evap"])
            inflow = out
        runoff += inflow * inflow
    return runoff


@numba.njit
def morse_energy(r, site):
    """A Morse potential summed over distances; well depth and width read from one record
    (`site.depth`, `site['width']`)."""
    e = 0.0
    for k in range(r.shape[0]):
        z = 1.0 - np.exp(-site["width"] * (r[k] - site.r0))
        e += site.depth * z * z
    return e


@numba.njit
def nearest_site_energy(x, sites):
    """Each point takes the Morse parameters of its nearest site, the record found by an
    argmin loop (`best = sites[j]`: a record carried around the loop and chosen by a branch)."""
    e = 0.0
    for k in range(x.shape[0]):
        best = sites[0]
        for j in range(1, sites.shape[0]):
            if abs(x[k] - sites[j].r0) < abs(x[k] - best.r0):
                best = sites[j]
        z = 1.0 - np.exp(-best.width * (x[k] - best.r0))
        e += best.depth * z * z
    return e


@numba.njit
def _bucket_step(state, rain, k_out, evap):
    state.storage += rain
    state.outflow = k_out * state.storage
    state.storage -= state.outflow + evap * state.storage


@numba.njit
def bucket_record_run(rain, state, k_out, evap):
    """One bucket's state in a record, updated in place by a step helper over a rain series
    (a record argument written, the way a model's state record is)."""
    total = 0.0
    for t in range(rain.shape[0]):
        _bucket_step(state, rain[t], k_out, evap)
        total += state.outflow ** 2
    return total + state.storage


def _buckets():
    return np.array([(1.5, 0.3, 0.05), (0.8, 0.6, 0.02)], dtype=BUCKET)


SITE = np.dtype([("depth", "f8"), ("width", "f8"), ("r0", "f8")])

# --- records written: state kept in structured arrays ---------------------------------------

PARTICLE = np.dtype([("x", "f8"), ("v", "f8"), ("f", "f8"), ("mass", "f8"), ("kind", "i8")])
CELL = np.dtype([("s", "f8"), ("i", "f8"), ("beta", "f8"), ("active", "?")])  # not aligned
BUCKET_STATE = np.dtype([("storage", "f8"), ("outflow", "f8")])


@numba.njit
def _pair_force(a, b, k, r0):
    """A spring between two particles: forces added into both records (helpers given p[i])."""
    d = b.x - a.x
    f = k * (abs(d) - r0) * np.sign(d)
    a.f += f
    b["f"] -= f


@numba.njit
def particle_chain(particles, k, r0, dt, steps):
    """Velocity Verlet on a chain of particles kept in a structured array, the way molecular
    dynamics codes keep their state: forces written into the records by a helper, velocities
    and positions updated field by field, a kinetic energy over whole-field views."""
    p = particles
    n = p.shape[0]
    for _ in range(steps):
        p["f"][:] = 0.0
        for i in range(n - 1):
            _pair_force(p[i], p[i + 1], k, r0)
        for part in p:
            part.v += 0.5 * dt * part.f / part.mass
            part["x"] = part.x + dt * part.v
        p["f"][:] = 0.0
        for i in range(n - 1):
            _pair_force(p[i], p[i + 1], k, r0)
        for i in range(n):
            p[i]["v"] += 0.5 * dt * p[i]["f"] / p[i]["mass"]
    return 0.5 * np.sum(p["mass"] * p["v"] ** 2) + p[n - 1].x


@numba.njit
def sir_grid(cells, gamma, days):
    """An SIR epidemic on a grid of cells (a 2-D structured array whose dtype has a bool field,
    so its records are not aligned), each day's state written back into the cells; the total
    infected of the active cells at the end."""
    rows, cols = cells.shape
    for _ in range(days):
        for r in range(rows):
            for c in range(cols):
                cell = cells[r, c]
                if not cell.active:
                    continue
                new = cell.beta * cell.s * cell.i
                cell.s = cell.s - new
                cells[r, c]["i"] = cell.i + new - gamma * cell.i
    return np.sum(cells["i"] * cells["beta"])


@numba.njit
def bucket_states(rain, params):
    """Linear reservoirs whose states live in a structured array the kernel allocates (one
    entry per bucket: storage and outflow), written every time step."""
    state = np.zeros(params.shape[0], dtype=BUCKET_STATE)
    total = 0.0
    for t in range(rain.shape[0]):
        inflow = rain[t]
        for i in range(params.shape[0]):
            st = state[i]
            st.storage += inflow
            st["outflow"] = params[i].k_out * st.storage
            st.storage -= st.outflow
            inflow = st.outflow
        total += state[params.shape[0] - 1].outflow ** 2
    return total + np.sum(state["storage"])


PIC_PARTICLE = np.dtype([("x", "f8"), ("y", "f8"), ("vx", "f8"), ("vy", "f8")])


@numba.njit
def pic_push(particles, ex, ey, qm, dt, steps):
    """The particle push of a 2-D electrostatic particle-in-cell code whose particles live in a
    structured array (x, y, vx, vy), as PIC codes in Python keep them: the field gathered at
    each particle by bilinear (cloud-in-cell) weights on a periodic grid, velocities and
    positions updated in place, positions wrapped; the kinetic energy at the end."""
    ny, nx = ex.shape
    for _ in range(steps):
        for p in particles:
            ix, iy = int(math.floor(p.x)), int(math.floor(p.y))
            dx, dy = p.x - ix, p.y - iy
            ix0, iy0 = ix % nx, iy % ny
            ix1, iy1 = (ix + 1) % nx, (iy + 1) % ny
            w00, w10 = (1.0 - dx) * (1.0 - dy), dx * (1.0 - dy)
            w01, w11 = (1.0 - dx) * dy, dx * dy
            fx = (w00 * ex[iy0, ix0] + w10 * ex[iy0, ix1] + w01 * ex[iy1, ix0]
                  + w11 * ex[iy1, ix1])
            fy = (w00 * ey[iy0, ix0] + w10 * ey[iy0, ix1] + w01 * ey[iy1, ix0]
                  + w11 * ey[iy1, ix1])
            p.vx += qm * dt * fx
            p["vy"] += qm * dt * fy
            p.x = (p.x + dt * p.vx) % nx
            p["y"] = (p.y + dt * p.vy) % ny
    return 0.5 * np.sum(particles["vx"] ** 2 + particles["vy"] ** 2)


ATOM = np.dtype([("mass", "f8"), ("pos", "f8", (3,)), ("vel", "f8", (3,)), ("acc", "f8", (3,)),
                 ("species", "i4")])  # 84 bytes: array fields, a dtype that is not aligned


@numba.njit
def lj_accelerations(atoms, eps, sigma):
    """Lennard-Jones forces written into each atom's `acc` field; the potential energy."""
    for a in atoms:
        a.acc[:] = 0.0
    energy = 0.0
    for i in range(atoms.shape[0]):
        for j in range(i + 1, atoms.shape[0]):
            d = atoms[i].pos - atoms[j].pos
            r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
            s6 = (sigma * sigma / r2) ** 3
            energy += 4.0 * eps * (s6 * s6 - s6)
            f = 24.0 * eps * (2.0 * s6 * s6 - s6) / r2
            atoms[i].acc[:] += f * d / atoms[i].mass
            atoms[j]["acc"][:] -= f * d / atoms[j].mass
    return energy


@numba.njit
def lj_verlet(atoms, eps, sigma, dt, steps):
    """Velocity Verlet for atoms kept in a structured array with 3-vector fields (position,
    velocity, acceleration), as molecular-dynamics codes in Python keep them: half kicks and
    drifts through the fields, forces by a helper; the total energy at the end."""
    lj_accelerations(atoms, eps, sigma)
    for _ in range(steps):
        for a in atoms:
            a.vel[:] += 0.5 * dt * a.acc
            a.pos[:] += dt * a.vel
        potential = lj_accelerations(atoms, eps, sigma)
        for a in atoms:
            a.vel[:] += 0.5 * dt * a.acc
    kinetic = 0.0
    for a in atoms:
        kinetic += 0.5 * a.mass * np.sum(a.vel ** 2)
    return kinetic + potential


def _atoms():
    rng = _rng(26)
    a = np.zeros(4, dtype=ATOM)
    a["mass"] = [1.0, 1.5, 1.0, 2.0]
    a["pos"] = np.array([[0.0, 0.0, 0.0], [1.1, 0.1, 0.0], [0.1, 1.2, 0.1], [1.0, 1.1, 0.9]])
    a["vel"] = rng.uniform(-0.2, 0.2, (4, 3))
    return a


@numba.njit
def spring_lattice(state, dt, steps):
    """A chain of springs whose whole state is one record holding arrays (`x`, `v` of shape
    (n, 2), and the stiffness): symplectic Euler through views of the record's array fields."""
    x, v = state["x"], state["v"]
    n = x.shape[0]
    for _ in range(steps):
        for i in range(n):
            for c in range(2):
                left = x[i - 1, c] if i > 0 else 0.0
                right = x[i + 1, c] if i < n - 1 else 0.0
                v[i, c] += dt * state.k * (left + right - 2.0 * x[i, c])
        x += dt * v
    return 0.5 * np.sum(v ** 2) + 0.5 * state.k * np.sum((x[1:] - x[:-1]) ** 2)


def _lattice():
    lattice = np.dtype([("x", "f8", (5, 2)), ("v", "f8", (5, 2)), ("k", "f8")])
    state = np.zeros(1, dtype=lattice)[0]
    state["x"] = _rng(27).uniform(-0.5, 0.5, (5, 2))
    state["v"] = _rng(28).uniform(-0.5, 0.5, (5, 2))
    state["k"] = 1.7
    return state


def _pic_particles():
    p = np.zeros(5, dtype=PIC_PARTICLE)
    p["x"] = [0.3, 1.4, 2.6, 3.5, 0.8]
    p["y"] = [0.6, 2.3, 1.2, 0.4, 2.7]
    p["vx"] = [0.2, -0.1, 0.05, 0.3, -0.25]
    p["vy"] = [-0.15, 0.1, 0.2, -0.05, 0.1]
    return p


def _particles():
    p = np.zeros(4, dtype=PARTICLE)
    p["x"] = [0.0, 1.1, 2.3, 3.2]
    p["v"] = [0.1, -0.2, 0.05, 0.0]
    p["mass"] = [1.0, 2.0, 1.5, 1.0]
    return p


def _cells():
    cells = np.zeros((2, 3), dtype=CELL)
    cells["s"] = _rng(20).uniform(0.6, 0.9, (2, 3))
    cells["i"] = _rng(21).uniform(0.01, 0.1, (2, 3))
    cells["beta"] = _rng(22).uniform(0.2, 0.5, (2, 3))
    cells["active"] = [[True, False, True], [True, True, False]]
    return cells

# --- whole records copied: sorting particles, histories, new states returned ----------------

SPH_PARTICLE = np.dtype([("x", "f8"), ("m", "f8"), ("h", "f8"), ("cell", "i8")])


@numba.njit
def sph_density_sorted(particles, h_scale):
    """Smoothed-particle density with the particles re-sorted by cell before the pair loop, as
    SPH codes sort their particle arrays for locality (`p = p[np.argsort(p['cell'])]`), the
    neighbours of a particle being the next ones in sorted order; a cubic-spline-like kernel
    of the smoothing length `h * h_scale`."""
    for i in range(particles.shape[0]):
        particles[i].cell = int(math.floor(particles[i].x))
    p = particles[np.argsort(particles["cell"])]
    rho = np.zeros(p.shape[0])
    for i in range(p.shape[0]):
        for j in range(max(i - 2, 0), min(i + 3, p.shape[0])):
            q = abs(p[i].x - p[j].x) / (p[i].h * h_scale)
            if q < 1.0:
                rho[i] += p[j].m * (1.0 - q) ** 3 / (p[i].h * h_scale)
    return np.sum(rho ** 2)


def _sph_particles():
    p = np.zeros(6, dtype=SPH_PARTICLE)
    p["x"] = [2.7, 0.4, 1.9, 0.9, 2.2, 1.3]
    p["m"] = [1.0, 1.2, 0.8, 1.1, 0.9, 1.0]
    p["h"] = [1.1, 0.9, 1.2, 1.0, 1.05, 0.95]
    return p


OBSERVATION = np.dtype([("t", "f8"), ("y", "f8"), ("weight", "f8")])


@numba.njit
def filtered_history(obs, gain, steps):
    """An exponential filter keeping its last states newest first in a structured array
    (`hist[1:] = hist[:-1]`, then the new entry on top), the oldest dropped: records shifted
    by an overlapping slice assignment and whole records assigned."""
    hist = obs.copy()
    for k in range(steps):
        newest = hist[0]
        hist[1:] = hist[:-1]
        hist[0] = newest
        hist[0].t = newest.t + 1.0
        hist[0].y = (1.0 - gain) * hist[1].y + gain * obs[k % obs.shape[0]].y
    return np.sum(hist["weight"] * hist["y"] ** 2)


def _observations():
    o = np.zeros(4, dtype=OBSERVATION)
    o["t"] = [0.0, -1.0, -2.0, -3.0]
    o["y"] = [0.5, -0.3, 0.8, 0.1]
    o["weight"] = [1.0, 0.8, 0.6, 0.4]
    return o


@numba.njit
def advected_particles(particles, u, dt):
    """One step of particles advected by a velocity field, the new state returned as a
    structured array of the same dtype (what a simulation's step function hands back):
    every mode, vjp taking a cotangent of the dtype."""
    out = particles.copy()
    for p in out:
        p.x += dt * (u * math.sin(p.x) + p.h)
        p.m *= 1.0 - 0.1 * dt
    return out


# --- unpacking arrays -----------------------------------------------------------------------


@numba.njit
def oscillator_energy(state, omega, steps):
    """Symplectic Euler on (position, velocity) unpacked from a 2-vector each step."""
    out = state.copy()
    for _ in range(steps):
        x, v = out
        v = v - 0.05 * omega * omega * np.sin(x)
        x = x + 0.05 * v
        out[0], out[1] = x, v
    pos, vel = out
    return 0.5 * vel * vel + omega * omega * (1.0 - np.cos(pos))


@numba.njit
def triangle_area(vertices):
    """Rows of a 3x2 array unpacked as points."""
    a, b, c = vertices
    ab, ac = b - a, c - a
    return 0.5 * np.abs(ab[0] * ac[1] - ab[1] * ac[0]) + np.sum((a - c) ** 2)


@numba.njit
def quadratic_roots_sum(coeffs):
    """The coefficients of a quadratic unpacked from a slice."""
    a, b, c = coeffs[:3]
    disc = np.sqrt(b * b - 4.0 * a * c)
    return (-b + disc) / (2.0 * a) * coeffs[3]


# --- list literals --------------------------------------------------------------------------


@numba.njit
def rosenbrock_residuals(x):
    """Residuals built with np.array([...]) and summed: least-squares style."""
    r = np.array([10.0 * (x[1] - x[0] * x[0]), 1.0 - x[0], x[2] - x[1]])
    return np.sum(r * r)


@numba.njit
def rotate_points(theta, pts):
    """A rotation matrix from a nested list literal."""
    c, s = np.cos(theta[0]), np.sin(theta[0])
    R = np.array([[c, -s], [s, c]])
    moved = pts @ R.T
    return np.sum(moved[:, 0] ** 3) + np.sum(moved[:, 1])


@numba.njit
def multiscale_smoothness(x):
    """Loops over a list of scales; sum, min and max of list literals."""
    total = 0.0
    for w in [0.5, 1.0, 2.0]:
        for i in range(x.shape[0] - 1):
            total += w * (x[i + 1] - x[i]) ** 2
    ends = [x[0], x[-1], 1]
    return total + sum(ends) * min([x[0], x[1]]) + max([x[1] ** 2, x[2]]) + ends[1] * len(ends)


# --- *args and calls spreading a tuple -------------------------------------------------------


@numba.njit
def weighted_sum(scale, *terms):
    s = 0.0
    for t in terms:
        s += t
    return scale * s


@numba.njit
def lennard_jones(r2, eps, sigma):
    s6 = (sigma * sigma / r2) ** 3
    return 4.0 * eps * (s6 * s6 - s6)


@numba.njit
def pair_energy(x):
    """A varargs helper, and a parameter tuple spread into a call."""
    params = (x[2], 1.1)
    e = lennard_jones(x[0] * x[0] + 1.0, *params)
    return weighted_sum(0.5, e, x[1] * x[1], np.sin(x[0]))


# --- iteration over .flat -------------------------------------------------------------------


@numba.njit
def total_variation_flat(img):
    """Every pixel visited through img.flat (and its transpose's, in C order of the view)."""
    s = 0.0
    prev = 0.0
    for v in img.flat:
        s += np.sqrt((v - prev) ** 2 + 1e-3)
        prev = v
    for i, v in enumerate(img.T.flat):
        s += 0.01 * i * v * v
    return s


# --- literal_unroll over heterogeneous tuples -------------------------------------------------


@numba.njit
def mixed_penalties(x, grid):
    """A penalty over a tuple of a vector, a matrix and a scalar (numba unrolls `literal_unroll`
    imported by name, over a tuple held in a variable)."""
    terms = (x, grid * x[0], x[1] * x[2])
    s = 0.0
    for t in literal_unroll(terms):
        s += np.sum(t * t)
    return s


@numba.njit
def weighted_terms(x):
    """Several floats and an int among the entries: read by the loop index."""
    terms = (x[0] * x[1], 2, np.sin(x[2]), x[3])
    s = 0.0
    for t in literal_unroll(terms):
        s = s * 0.5 + t * t
    return s


# --- namedtuples holding differentiated values ---------------------------------------------

State = collections.namedtuple("State", ["pos", "vel"])
Spring = collections.namedtuple("Spring", ["k", "damping", "steps"])


@numba.njit
def _spring_step(s, spring, h):
    force = -spring.k * s.pos - spring.damping * s.vel
    return State(s.pos + h * s.vel, vel=s.vel + h * force)


@numba.njit
def damped_spring(x, spring):
    """State kept in a namedtuple, rebuilt each step by a helper; the spring's parameters in
    another (differentiated too)."""
    s = State(x[0], x[1] * x[2])
    for _ in range(spring.steps):
        s = _spring_step(s, spring, 0.05)
    pos, vel = s
    return pos * pos + 0.5 * s[1] ** 2 + spring.k * vel


# --- strings as configuration --------------------------------------------------------------


@numba.njit
def _rhs_step(y, h, method):
    if method == "euler":
        return y + h * np.sin(y)
    elif method != "midpoint":
        raise ValueError("unknown method")
    mid = y + 0.5 * h * np.sin(y)
    return y + h * np.sin(mid)


@numba.njit
def integrate_with_method(y0, method):
    """A string passed from Python chooses the integrator."""
    y = y0.copy()
    for _ in range(8):
        y = _rhs_step(y, 0.1, method)
    return np.sum(y * y)


@numba.njit
def integrate_both(y0):
    """String constants inside the kernel choose the integrator."""
    return integrate_with_method(y0, "euler") - 0.5 * integrate_with_method(y0, "midpoint")


# --- jitclass instances: fields read, methods called ----------------------------------------


@jitclass([("gain", numba.float64), ("weights", numba.float64[:]), ("steps", numba.int64)])
class Neuron:
    def __init__(self, gain, weights, steps):
        self.gain = gain
        self.weights = weights
        self.steps = steps

    def activation(self, v, shift=0.0):
        return np.tanh(self.gain * v + shift)

    @staticmethod
    def squash(v):
        return v / (1.0 + v * v)

    def response(self, x):
        s = 0.0
        for i in range(x.shape[0]):
            s += self.weights[i] * self.activation(x[i], shift=0.1)
        return s


@numba.njit
def neuron_loss(x, cell):
    """Methods of a jitclass configuration (one calling another, a keyword argument, a static
    method)."""
    total = 0.0
    for _ in range(cell.steps):
        total += (cell.response(x) - 0.5) ** 2
    return total + cell.activation(x[0]) + cell.squash(x[1])


# --- jitclass instances built from values being differentiated -----------------------------


@jitclass([("stiffness", numba.float64), ("rest", numba.float64), ("damping", numba.float64)])
class Bond:
    def __init__(self, stiffness, rest, damping):
        self.stiffness = stiffness
        self.rest = rest
        self.damping = damping * np.sqrt(stiffness)  # a field computed from others

    def force(self, r, v):
        return -self.stiffness * (r - self.rest) - self.damping * v


@numba.njit
def chain_energy(positions, params):
    """A bond built in the loop from the parameters being differentiated; its method called."""
    e = 0.0
    for i in range(positions.shape[0] - 1):
        bond = Bond(params[0] * (1.0 + 0.1 * i), params[1], params[2])
        r = positions[i + 1] - positions[i]
        e += bond.force(r, 0.1 * r) ** 2
    return e


@jitclass([("weights", numba.float64[:, :]), ("bias", numba.float64[:]), ("scale", numba.float64),
           ("width", numba.int64)])
class Dense:
    def __init__(self, weights, bias, scale):
        self.weights = weights
        self.bias = bias
        self.width = weights.shape[0]
        if scale > 0.0:
            self.scale = scale
            return  # an early return: the fields set so far
        self.scale = -scale

    def apply(self, x):
        out = np.empty(self.width)
        for j in range(self.width):
            out[j] = np.tanh(self.scale * (self.weights[j] @ x) + self.bias[j])
        return out


@numba.njit
def make_layer(weights, bias, t):
    return Dense(weights * t, bias, t * t - 0.2)


@numba.njit
def layer_output(layer, x):
    return np.sum(layer.apply(x) ** 2) + layer.scale


@numba.njit
def two_layer_loss(x, weights, bias, t):
    """Instances with array fields built by a helper, passed to another helper, read in a
    tuple; a constructor with a branch and an early return."""
    first = make_layer(weights, bias, t)
    pair = (first, Dense(weights.T.copy(), bias[:weights.shape[1]] * t, -t))
    return layer_output(pair[0], x) + layer_output(pair[1], first.apply(x)) * first.width


@jitclass([("x", numba.float64), ("v", numba.float64)])
class PhaseState:
    def __init__(self, x, v):
        self.x = x
        self.v = v

    def energy(self, k):
        return 0.5 * self.v * self.v + 0.5 * k * self.x * self.x


@numba.njit
def leapfrog_energy(state0, k, dt, steps):
    """An immutable state object rebuilt at every step of an integrator, one chosen by a
    branch at the end."""
    s = PhaseState(state0[0], state0[1])
    for _ in range(steps):
        v_half = s.v - 0.5 * dt * k * s.x
        x_new = s.x + dt * v_half
        s = PhaseState(x_new, v_half - 0.5 * dt * k * x_new)
    final = s if s.x > 0.0 else PhaseState(-s.x, s.v)
    return final.energy(k) + final.x


# --- jitclass instances as arguments differentiated ----------------------------------------


@jitclass([("k", numba.float64), ("c", numba.float64), ("n", numba.int64),
           ("w", numba.float64[:]), ("label", numba.types.unicode_type)])
class CubicSpring:
    def __init__(self, k, c, n, w):
        self.k = k
        self.c = c
        self.n = n
        self.w = w
        self.label = "spring"

    def force(self, x):
        return self.k * x + self.c * x ** 3


@numba.njit
def spring_energy(s, x):
    """A method called on the argument, its array field read, its int field a factor."""
    e = 0.0
    for i in range(x.shape[0]):
        e += 0.5 * s.force(x[i]) * x[i] * s.w[i]
    return e * s.n


@jitclass([("rate", numba.float64), ("store", numba.float64[:])])
class Reservoir:
    def __init__(self, rate, n):
        self.rate = rate
        self.store = np.zeros(n)


@numba.njit
def drain(r, inflow):
    """A linear reservoir routing inflow through its store, an array field written in place
    (its __init__ allocates: capture keeps numba's constructor for it)."""
    out = 0.0
    for t in range(inflow.shape[0]):
        r.store[t] = (r.store[t - 1] if t > 0 else 0.0) + inflow[t]
        q = r.rate * r.store[t]
        r.store[t] -= q
        out += q * q
    return out


# --- jitclass fields written after construction (methods updating their state) ---------------


@jitclass([("n", numba.int64), ("mean", numba.float64), ("m2", numba.float64)])
class RunningMoments:
    """Welford's online mean and variance, the way streaming statistics are kept."""

    def __init__(self):
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0

    def push(self, value):
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)

    def variance(self):
        return self.m2 / (self.n - 1) if self.n > 1 else 0.0


@numba.njit
def standardised_peak(samples, scale):
    """Moments pushed one sample at a time (fields updated in a method, in a loop), then read."""
    moments = RunningMoments()
    peak = -np.inf
    for v in samples:
        moments.push(scale * v)
        peak = max(peak, scale * v)
    return (peak - moments.mean) / math.sqrt(moments.variance())


@jitclass([("w", numba.float64[:]), ("velocity", numba.float64[:]), ("lr", numba.float64),
           ("momentum", numba.float64), ("steps", numba.int64)])
class MomentumSGD:
    def __init__(self, w, lr, momentum):
        self.w = w
        self.velocity = np.zeros_like(w)
        self.lr = lr
        self.momentum = momentum
        self.steps = 0

    def step(self, grad):
        self.velocity = self.momentum * self.velocity - self.lr * grad
        self.w = self.w + self.velocity
        self.steps += 1


@numba.njit
def fitted_loss(w0, X, y, lr):
    """A few steps of least-squares fitting by an optimiser object whose array fields are
    rebound each step; the loss at the end, differentiated through the whole training."""
    opt = MomentumSGD(w0.copy(), lr, 0.5)
    for _ in range(4):
        r = X @ opt.w - y
        opt.step(X.T @ r / y.shape[0])
    r = X @ opt.w - y
    return 0.5 * np.dot(r, r) + 1e-3 * opt.steps


@jitclass([("x", numba.float64), ("v", numba.float64), ("t", numba.float64),
           ("stiffness", numba.float64)])
class DuffingState:
    def __init__(self, x, v, stiffness):
        self.x = x
        self.v = v
        self.t = 0.0
        self.stiffness = stiffness

    def kick(self, dt, drive):
        self.v += dt * (drive * math.cos(self.t) - self.stiffness * self.x - self.x ** 3)

    def drift(self, dt):
        self.x += dt * self.v
        self.t += dt


@numba.njit
def duffing_action(state, drive, steps):
    """An oscillator's state passed in and advanced in place by its methods (a kick-drift
    integrator), with a branch on a field; the kernel is differentiated with respect to the
    instance too."""
    action = 0.0
    for _ in range(steps):
        state.kick(0.05, drive)
        state.drift(0.05)
        if state.x > 0.0:
            action += state.v * state.v
        else:
            action += 0.5 * state.v * state.v
    return action * 0.05 + state.x


@structref.register
class FilterStateType(numba.types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, numba.types.unliteral(t)) for name, t in fields)


class FilterState(structref.StructRefProxy):
    """A scalar Kalman filter's estimate and its variance, as a structref (numba's mutable
    struct without a class body: its methods are njit functions taking it)."""

    def __new__(cls, mean, var):
        return structref.StructRefProxy.__new__(cls, mean, var)

    @property
    def mean(self):
        return _fields_of_filter_state(self)[0]

    @property
    def var(self):
        return _fields_of_filter_state(self)[1]


@numba.njit
def _fields_of_filter_state(state):
    return state.mean, state.var


structref.define_proxy(FilterState, FilterStateType, ["mean", "var"])


@numba.njit
def _kalman_update(state, z, noise):
    gain = state.var / (state.var + noise)
    state.mean += gain * (z - state.mean)
    state.var *= 1.0 - gain


@numba.njit
def kalman_loglik(zs, q, r):
    """A random-walk Kalman filter's log likelihood: the state a structref built in the kernel,
    predicted and updated in place by an njit helper at each observation."""
    state = FilterState(zs[0], 1.0)
    ll = 0.0
    for z in zs[1:]:
        state.var += q
        s = state.var + r
        ll -= 0.5 * (math.log(2.0 * math.pi * s) + (z - state.mean) ** 2 / s)
        _kalman_update(state, z, r)
    return ll



@structref.register
class OscillatorType(numba.types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, numba.types.unliteral(t)) for name, t in fields)


class Oscillator(structref.StructRefProxy):
    """A damped oscillator's position and velocity, as a structref whose methods are written
    the way numba's structref documentation writes them: with `@overload_method`."""

    def __new__(cls, x, v):
        return structref.StructRefProxy.__new__(cls, x, v)


structref.define_proxy(Oscillator, OscillatorType, ["x", "v"])


@overload_method(OscillatorType, "step")
def _oscillator_step(self, dt, k, c):
    def impl(self, dt, k, c):  # semi-implicit Euler: fields written in place
        self.v = self.v - dt * (k * self.x + c * self.v)
        self.x = self.x + dt * self.v
    return impl


@overload_method(OscillatorType, "energy")
def _oscillator_energy(self, k):
    def impl(self, k):
        return 0.5 * self.v * self.v + 0.5 * k * self.x * self.x
    return impl


@numba.njit
def oscillator_energy_path(x0, k, c, steps):
    """The energy of an oscillator built in the kernel, advanced by its own methods, summed
    along the path."""
    osc = Oscillator(x0, 0.0)
    total = 0.0
    for _ in range(steps):
        osc.step(0.1, k, c)
        total += osc.energy(k)
    return total


@numba.njit
def oscillator_from_argument(osc, k, c):
    """The same methods on an oscillator the caller gives (held fixed: only k and c vary)."""
    total = 0.0
    for _ in range(6):
        osc.step(0.05, k, c)
        total += osc.energy(k) * osc.x
    return total

# --- lists built by appending: comprehensions, filters, appends in loops ---------------------


@numba.njit
def rbf_features(x, centres, weights):
    """Radial basis features of a point, built with a list comprehension over an array."""
    phi = np.array([np.exp(-np.sum((x - c) ** 2)) for c in centres])
    return np.dot(weights, phi)


@numba.njit
def hinge_above(x, margin):
    """A filtered comprehension (only the entries over the margin), summed with Python's sum
    and averaged over its length."""
    losses = [(v - margin) ** 2 for v in x if v > margin]
    if len(losses) == 0:
        return 0.0
    return sum(losses) / len(losses)


@numba.njit
def pair_repulsion(points, cutoff):
    """Pair distances under a cutoff collected by append in a double loop, then reduced as an
    array."""
    dists = []
    n = points.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = np.sqrt(np.sum((points[i] - points[j]) ** 2))
            if d < cutoff:
                dists.append(d)
    d = np.array(dists)
    return np.sum(np.exp(-d)) + d.max()


@numba.njit
def recorded_trajectory(y0, k, dt, steps):
    """An integrator that records its states in lists (starting from the initial value) until
    the list is long enough, one entry rewritten after the loop, the last read with a negative
    index, the list walked with enumerate."""
    ys = [y0[0]]
    vs = [y0[1]]
    while len(ys) <= steps:
        y, v = ys[-1], vs[-1]
        ys.append(y + dt * v)
        vs.append(v - dt * k[0] * y - dt * k[1] * v)
    ys[0] = 0.5 * ys[0]
    total = 0.0
    for i, y in enumerate(ys):
        total += y * y * (i + 1)
    return total + min(vs) * max(vs) + vs[-1]


@numba.njit
def weighted_residual_sum(x, w):
    """sum() of a list comprehension over range, and an integer list of the kept indices."""
    kept = [i for i in range(x.shape[0]) if w[i] > 0.0]
    r = sum([w[i] * (x[i] - 1.0) ** 2 for i in kept])
    for i in kept:
        r += 0.1 * x[i] ** 3
    return r


@numba.njit
def _mean_and_spread(values):
    n = len(values)
    m = 0.0
    for v in values:
        m += v
    m /= n
    s = 0.0
    for i in range(n):
        s += (values[i] - m) ** 2
    return m, np.sqrt(s / n)


@numba.njit
def _clip_high(values, limit):
    for i in range(len(values)):
        if values[i] > limit:
            values[i] = limit


@numba.njit
def _weighted_last(values, weight=1.0):
    return weight * values[-1] ** 2


@numba.njit
def _lotka_volterra(state, params):
    prey, predator = state
    a, b, c, d = params
    return np.array([a * prey - b * prey * predator, c * prey * predator - d * predator])


@numba.njit
def _rk4_step(rhs, state, h, params):
    """A generic integrator step taking the right-hand side as an argument (the usual style
    of ODE codes written for numba)."""
    k1 = rhs(state, params)
    k2 = rhs(state + 0.5 * h * k1, params)
    k3 = rhs(state + 0.5 * h * k2, params)
    k4 = rhs(state + h * k3, params)
    return state + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


@numba.njit
def predator_prey_final(state0, params):
    """An njit right-hand side passed to a generic RK4 step, twelve steps."""
    state = state0.copy()
    for _ in range(12):
        state = _rk4_step(_lotka_volterra, state, 0.05, params)
    return state[0] * state[1]


@numba.njit
def peak_statistics(signal, threshold):
    """Peak heights over a threshold collected by append, then passed to njit helpers: one
    clips them in place (the caller sees it, as with a list), one summarises them, one takes
    the list by keyword."""
    peaks = []
    for i in range(1, signal.shape[0] - 1):
        if signal[i] > signal[i - 1] and signal[i] > signal[i + 1] and signal[i] > threshold:
            peaks.append(signal[i] - threshold)
    if len(peaks) == 0:
        return 0.0
    _clip_high(peaks, 0.8)
    m, s = _mean_and_spread(peaks)
    return m * s + peaks[0] + _weighted_last(weight=0.5, values=peaks)


Crossing = collections.namedtuple("Crossing", ["time", "index", "slope"])


@numba.njit
def crossing_period(signal, dt):
    """Zero crossings of a sampled signal, located by linear interpolation and collected by
    append as namedtuples (a float time, an int sample index, a float slope); the mean period
    from successive crossings, a penalty on steep ones walked with a for loop."""
    found = []
    for i in range(signal.shape[0] - 1):
        a, b = signal[i], signal[i + 1]
        if a * b < 0.0:
            found.append(Crossing((i + a / (a - b)) * dt, i, (b - a) / dt))
    if len(found) < 2:
        return 0.0
    total = 0.0
    for k in range(1, len(found)):
        total += found[k].time - found[k - 1].time
    steep = 0.0
    for c in found:
        steep += c.slope ** 2 * (c.index % 2 + 1)
    return total / (len(found) - 1) + 0.01 * steep


def _rng(seed):
    return np.random.default_rng(seed)


# records and structured arrays (checked by tests/capture/test_record_fields.py), then the rest
# (tests/capture/test_constructs.py): two test files, which tests/run.py runs side by side
RECORD_CASES = [
    ConstructCase("linear_reservoirs", "record field p[i]['f']", linear_reservoirs,
                  lambda: (_rng(0).uniform(0.2, 1.5, 6), _buckets())),
    ConstructCase("particle_chain", "record fields written, by helpers, whole-field views",
                  particle_chain, lambda: (_particles(), 2.0, 1.0, 0.05, 6)),
    ConstructCase("sir_grid", "fields of a 2-D structured array written (not aligned)",
                  sir_grid, lambda: (_cells(), 0.1, 5)),
    ConstructCase("bucket_states", "a structured array the kernel allocates, written",
                  bucket_states, lambda: (_rng(23).uniform(0.2, 1.5, 6), _buckets())),
    ConstructCase("pic_push", "a PIC push over particles in a structured array",
                  pic_push, lambda: (_pic_particles(), _rng(24).uniform(-1.0, 1.0, (3, 4)),
                                     _rng(25).uniform(-1.0, 1.0, (3, 4)), 0.8, 0.1, 3)),
    ConstructCase("lj_verlet", "records with 3-vector fields, read and written (MD)",
                  lj_verlet, lambda: (_atoms(), 0.3, 0.9, 0.01, 3),
                  second_order=False),  # its hvp compiles for 32 s at -O0; spring_lattice
    # and tests/capture/test_record_array_fields.py check array fields to second order
    ConstructCase("spring_lattice", "one record holding the state arrays", spring_lattice,
                  lambda: (_lattice(), 0.05, 4)),
    ConstructCase("morse_energy", "record argument, r['f'] and r.f", morse_energy,
                  lambda: (_rng(1).uniform(0.8, 1.6, 5),
                           np.array([(2.0, 1.3, 1.1)], dtype=SITE)[0])),
    ConstructCase("nearest_site_energy", "the record an argmin loop picks", nearest_site_energy,
                  lambda: (np.array([0.2, 1.05, 1.9, 2.6]),
                           np.array([(2.0, 1.3, 0.0), (1.5, 0.9, 1.2), (0.8, 1.7, 2.4)],
                                    dtype=SITE))),
    ConstructCase("sph_density_sorted", "particles gathered in sorted order, p[order]",
                  sph_density_sorted, lambda: (_sph_particles(), 1.1)),
    ConstructCase("filtered_history", "records shifted by p[1:] = p[:-1], assigned whole",
                  filtered_history, lambda: (_observations(), 0.3, 5)),
    ConstructCase("advected_particles", "a structured array returned", advected_particles,
                  lambda: (_sph_particles(), 0.7, 0.1), second_order=False),  # (no hvp of it)
    ConstructCase("bucket_record_run", "a record argument written by a step helper",
                  bucket_record_run,
                  lambda: (_rng(26).uniform(0.0, 2.0, 8),
                           np.array([(1.0, 0.0)], dtype=BUCKET_STATE)[0], 0.3, 0.05)),
]

CASES = RECORD_CASES + [
    ConstructCase("oscillator_energy", "a, b = array", oscillator_energy,
                  lambda: (np.array([0.4, -0.2]), 1.3, 20)),
    ConstructCase("triangle_area", "rows unpacked", triangle_area,
                  lambda: (np.array([[0.0, 0.1], [1.2, 0.3], [0.4, 0.9]]),)),
    ConstructCase("quadratic_roots_sum", "a, b, c = slice", quadratic_roots_sum,
                  lambda: (np.array([0.5, 3.0, 1.0, 0.7]),)),
    ConstructCase("rosenbrock_residuals", "np.array([...])", rosenbrock_residuals,
                  lambda: (np.array([0.3, 0.8, -0.4]),)),
    ConstructCase("rotate_points", "nested list literal", rotate_points,
                  lambda: (np.array([0.35]), _rng(2).uniform(-1.0, 1.0, (5, 2)))),
    ConstructCase("multiscale_smoothness", "for over a list, sum/min/max/len, index",
                  multiscale_smoothness, lambda: (_rng(3).uniform(-1.0, 1.0, 6),)),
    ConstructCase("pair_energy", "*args helper, f(*t)", pair_energy,
                  lambda: (np.array([0.9, 0.4, 0.8]),)),
    ConstructCase("total_variation_flat", "for v in a.flat, enumerate(a.T.flat)",
                  total_variation_flat, lambda: (_rng(4).uniform(-1.0, 1.0, (3, 4)),)),
    ConstructCase("neuron_loss", "jitclass methods and fields", neuron_loss,
                  lambda: (np.array([0.3, -0.2, 0.8]),
                           Neuron(1.5, np.array([0.5, -1.0, 2.0]), 2))),
    ConstructCase("chain_energy", "jitclass built in a loop from parameters", chain_energy,
                  lambda: (np.array([0.0, 1.1, 1.9, 3.2]), np.array([2.0, 1.0, 0.3]))),
    ConstructCase("two_layer_loss", "jitclasses with array fields built, passed, in a tuple",
                  two_layer_loss,
                  lambda: (np.array([0.3, -0.5]), _rng(13).uniform(-1.0, 1.0, (3, 2)),
                           np.array([0.1, -0.2, 0.05]), 0.8)),
    ConstructCase("leapfrog_energy", "jitclass state rebuilt in a loop, chosen by a branch",
                  leapfrog_energy, lambda: (np.array([0.7, -0.2]), 1.3, 0.1, 15)),
    ConstructCase("mixed_penalties", "literal_unroll, arrays and a float", mixed_penalties,
                  lambda: (_rng(5).uniform(-1.0, 1.0, 3), _rng(6).uniform(-1.0, 1.0, (2, 3)))),
    ConstructCase("weighted_terms", "literal_unroll, several floats", weighted_terms,
                  lambda: (_rng(7).uniform(-1.0, 1.0, 4),)),
    ConstructCase("damped_spring", "namedtuples built, read, unpacked, passed", damped_spring,
                  lambda: (np.array([0.8, -0.3, 1.2]), Spring(2.0, 0.3, 12))),
    ConstructCase("integrate_euler", "string argument", integrate_with_method,
                  lambda: (np.array([0.3, 1.1]), "euler")),
    ConstructCase("integrate_midpoint", "string argument", integrate_with_method,
                  lambda: (np.array([0.3, 1.1]), "midpoint")),
    ConstructCase("integrate_both", "string constants", integrate_both,
                  lambda: (np.array([0.3, 1.1]),)),
    ConstructCase("rbf_features", "np.array(list comprehension over an array)", rbf_features,
                  lambda: (np.array([0.2, -0.4]), _rng(8).uniform(-1.0, 1.0, (5, 2)),
                           _rng(9).uniform(-1.0, 1.0, 5))),
    ConstructCase("hinge_above", "filtered comprehension, sum() and len() of it", hinge_above,
                  lambda: (_rng(10).uniform(-1.0, 1.0, 8), 0.1)),
    ConstructCase("pair_repulsion", "append in a double loop under a branch", pair_repulsion,
                  lambda: (_rng(11).uniform(-1.0, 1.0, (6, 2)), 1.5)),
    ConstructCase("recorded_trajectory", "append in a while loop, ys[-1], ys[0] = ...",
                  recorded_trajectory,
                  lambda: (np.array([1.0, 0.2]), np.array([2.0, 0.3]), 0.1, 10)),
    ConstructCase("spring_energy", "a jitclass argument: fields, a method, int and str fields",
                  spring_energy, lambda: (CubicSpring(2.0, 0.5, 2, np.array([1.0, -0.5, 0.25])),
                                          np.array([0.7, -0.4, 1.1]))),
    ConstructCase("drain", "a jitclass argument whose array field the kernel writes", drain,
                  lambda: (Reservoir(0.3, 4), np.array([1.0, 0.5, 2.0, 0.0]))),
    ConstructCase("predator_prey_final", "an njit function passed as an argument to a helper",
                  predator_prey_final,
                  lambda: (np.array([1.2, 0.8]), np.array([1.1, 0.4, 0.3, 0.9]))),
    ConstructCase("peak_statistics", "a list built by append passed to njit helpers",
                  peak_statistics,
                  lambda: (np.array([0.1, 0.9, 0.2, 0.7, 0.3, 1.6, 0.4, 0.65, 0.1]), 0.3)),
    ConstructCase("crossing_period", "a list of namedtuples (float, int, float) by append",
                  crossing_period,
                  lambda: (np.sin(np.linspace(0.0, 9.0, 14)) + 0.1, 0.2)),
    ConstructCase("weighted_residual_sum", "sum([...]), an integer list walked",
                  weighted_residual_sum,
                  lambda: (_rng(12).uniform(-1.0, 1.0, 6), np.array([1.0, -1.0, 2.0, 0.5, -0.2,
                                                                     1.5]))),
    ConstructCase("standardised_peak", "a jitclass built in the kernel, fields updated by a "
                  "method in a loop (Welford)", standardised_peak,
                  lambda: (np.array([0.3, 1.4, -0.2, 0.8, 2.1, -1.0]), 1.3)),
    ConstructCase("fitted_loss", "array fields of a jitclass rebound by a method (an optimiser)",
                  fitted_loss,
                  lambda: (np.array([0.2, -0.1, 0.4]), _rng(13).uniform(-1.0, 1.0, (5, 3)),
                           _rng(14).uniform(-1.0, 1.0, 5), 0.3)),
    ConstructCase("duffing_action", "a jitclass argument advanced in place by its methods",
                  duffing_action, lambda: (DuffingState(0.4, -0.2, 1.5), 0.8, 12)),
    ConstructCase("kalman_loglik", "a structref built in the kernel, updated by a helper",
                  kalman_loglik, lambda: (np.array([0.2, 0.5, 0.1, 0.9, 1.3, 0.8]), 0.3, 0.5)),
    ConstructCase("oscillator_energy_path", "a structref whose @overload_method methods "
                  "write its fields", oscillator_energy_path, lambda: (0.8, 1.7, 0.3, 8)),
    ConstructCase("oscillator_from_argument", "@overload_method methods of a structref "
                  "argument held fixed", oscillator_from_argument,
                  lambda: (Oscillator(0.6, -0.2), 1.4, 0.25)),
]
