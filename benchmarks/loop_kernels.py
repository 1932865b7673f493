"""Loop kernels written the way numba users write them (the reverse-speed issue's family).

Plain loops, preallocated arrays written in place, temporaries overwritten every iteration;
nothing here is shaped for an AD tool. Each is differentiated with respect to its first argument,
a float array, and returns a float.
"""

import math

import numba
import numpy as np


@numba.njit
def llsq(x, n):
    # polynomial least squares against sign(t) on n points (as given in the issue)
    m = x.shape[0]
    total = 0.0
    for i in range(n):
        t = -1.0 + i * 2.0 / (n - 1)
        r = 1.0 if t > 0.0 else (-1.0 if t < 0.0 else 0.0)
        power = 1.0
        for j in range(m):
            r -= x[j] * power
            power *= t
        total += r * r
    return total / 2.0


@numba.njit
def rk4(p, y0, dt, steps):
    # classical RK4 on a chain of coupled damped oscillators, stages in preallocated arrays
    n = y0.shape[0]
    y = y0.copy()
    k1 = np.empty(n)
    k2 = np.empty(n)
    k3 = np.empty(n)
    k4 = np.empty(n)
    tmp = np.empty(n)
    for _ in range(steps):
        for i in range(n):
            k1[i] = -p[0] * y[i] + p[1] * math.sin(y[(i + 1) % n]) - p[2] * y[i] * y[i] * y[i]
        for i in range(n):
            tmp[i] = y[i] + 0.5 * dt * k1[i]
        for i in range(n):
            k2[i] = -p[0] * tmp[i] + p[1] * math.sin(tmp[(i + 1) % n]) - p[2] * tmp[i] ** 3
        for i in range(n):
            tmp[i] = y[i] + 0.5 * dt * k2[i]
        for i in range(n):
            k3[i] = -p[0] * tmp[i] + p[1] * math.sin(tmp[(i + 1) % n]) - p[2] * tmp[i] ** 3
        for i in range(n):
            tmp[i] = y[i] + dt * k3[i]
        for i in range(n):
            k4[i] = -p[0] * tmp[i] + p[1] * math.sin(tmp[(i + 1) % n]) - p[2] * tmp[i] ** 3
        for i in range(n):
            y[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    s = 0.0
    for i in range(n):
        s += y[i] * y[i]
    return s


@numba.njit
def gmm_loglik(theta, X):
    # 1-D Gaussian mixture, K components: theta = [means, log sigmas, weight logits];
    # a per-point temporary lp[k] overwritten for every point, log-sum-exp per point
    K = theta.shape[0] // 3
    lp = np.empty(K)
    wmax = theta[2 * K]
    for k in range(K):
        if theta[2 * K + k] > wmax:
            wmax = theta[2 * K + k]
    wsum = 0.0
    for k in range(K):
        wsum += math.exp(theta[2 * K + k] - wmax)
    lognorm = wmax + math.log(wsum)
    total = 0.0
    for i in range(X.shape[0]):
        for k in range(K):
            s = math.exp(theta[K + k])
            z = (X[i] - theta[k]) / s
            lp[k] = theta[2 * K + k] - lognorm - 0.5 * z * z - theta[K + k] \
                - 0.9189385332046727
        m = lp[0]
        for k in range(1, K):
            if lp[k] > m:
                m = lp[k]
        acc = 0.0
        for k in range(K):
            acc += math.exp(lp[k] - m)
        total += m + math.log(acc)
    return total


@numba.njit
def lstm(w, xs, H):
    # LSTM-style cell over a sequence of scalars; h and c updated in place, gate temporaries.
    # w holds 4 gates x (H recurrent + 1 input + 1 bias) rows of length H, then a readout of H
    T = xs.shape[0]
    h = np.zeros(H)
    c = np.zeros(H)
    g = np.empty(4 * H)
    stride = H + 2
    for t in range(T):
        for r in range(4 * H):
            base = r * stride
            a = w[base + H] * xs[t] + w[base + H + 1]
            for j in range(H):
                a += w[base + j] * h[j]
            g[r] = a
        for j in range(H):
            ig = 1.0 / (1.0 + math.exp(-g[j]))
            fg = 1.0 / (1.0 + math.exp(-g[H + j]))
            og = 1.0 / (1.0 + math.exp(-g[2 * H + j]))
            cand = math.tanh(g[3 * H + j])
            c[j] = fg * c[j] + ig * cand
            h[j] = og * math.tanh(c[j])
    out = 0.0
    base = 4 * H * stride
    for j in range(H):
        out += w[base + j] * h[j]
    return out


@numba.njit
def stream_lse(x):
    # streaming (one-pass) logsumexp with a running max and rescaled running sum
    m = -np.inf
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > m:
            s = s * math.exp(m - x[i]) + 1.0
            m = x[i]
        else:
            s += math.exp(x[i] - m)
    return m + math.log(s)


@numba.njit
def reprojection(cam, pts, obs):
    # pinhole camera (angle-axis rotation, translation, focal length, 2 radial terms);
    # squared reprojection residual per observation, summed over observations
    total = 0.0
    for i in range(pts.shape[0]):
        theta2 = cam[0] * cam[0] + cam[1] * cam[1] + cam[2] * cam[2]
        X = pts[i, 0]
        Y = pts[i, 1]
        Z = pts[i, 2]
        if theta2 > 1e-12:
            theta = math.sqrt(theta2)
            ct = math.cos(theta)
            st = math.sin(theta)
            wx = cam[0] / theta
            wy = cam[1] / theta
            wz = cam[2] / theta
            cx = wy * Z - wz * Y
            cy = wz * X - wx * Z
            cz = wx * Y - wy * X
            d = (wx * X + wy * Y + wz * Z) * (1.0 - ct)
            px = X * ct + cx * st + wx * d
            py = Y * ct + cy * st + wy * d
            pz = Z * ct + cz * st + wz * d
        else:
            px = X + cam[1] * Z - cam[2] * Y
            py = Y + cam[2] * X - cam[0] * Z
            pz = Z + cam[0] * Y - cam[1] * X
        px += cam[3]
        py += cam[4]
        pz += cam[5]
        u = px / pz
        v = py / pz
        r2 = u * u + v * v
        dist = 1.0 + cam[7] * r2 + cam[8] * r2 * r2
        ru = cam[6] * dist * u - obs[i, 0]
        rv = cam[6] * dist * v - obs[i, 1]
        total += ru * ru + rv * rv
    return total


@numba.njit
def kinematic_chain(theta, lengths, target):
    # planar arm: product of 3x3 homogeneous link transforms, small-matrix temporaries
    # overwritten per link; squared distance of the end effector to a target
    T = np.eye(3)
    L = np.zeros((3, 3))
    tmp = np.empty((3, 3))
    for k in range(theta.shape[0]):
        c = math.cos(theta[k])
        s = math.sin(theta[k])
        L[0, 0] = c
        L[0, 1] = -s
        L[0, 2] = lengths[k] * c
        L[1, 0] = s
        L[1, 1] = c
        L[1, 2] = lengths[k] * s
        L[2, 2] = 1.0
        for i in range(3):
            for j in range(3):
                a = 0.0
                for q in range(3):
                    a += T[i, q] * L[q, j]
                tmp[i, j] = a
        for i in range(3):
            for j in range(3):
                T[i, j] = tmp[i, j]
    dx = T[0, 2] - target[0]
    dy = T[1, 2] - target[1]
    return dx * dx + dy * dy
