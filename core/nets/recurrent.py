"""Recurrent language models of §6, as nn.Modules: a vanilla RNN cell, a hand-written LSTM cell, and the LM around them.

    RNN   h_t = tanh(U x_t + W h_{t-1} + b)
    LSTM  f_t = σ(W_f h_{t-1} + U_f x_t + b_f)      (i_t and o_t have the same form)
          C̃_t = tanh(W_a h_{t-1} + U_a x_t + b_a)
          C_t = C_{t-1} ⊙ f_t + i_t ⊙ C̃_t
          h_t = o_t ⊙ tanh(C_t)

The LSTM's four gate blocks are stacked in torch.nn.LSTM's order (i, f, a=C̃, o), so weights copy straight across
for the parity test. Every forward pass returns the per-step gates and states, and the very h_t tensors the
recurrence used, so ∂loss_T/∂h_t can be measured with autograd (vanishing gradients, §6.2).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn as nn

GATES = ("input", "forget", "output", "candidate", "cell", "hidden")


@dataclass
class Trace:
    """One forward pass. Tensors are (B, T, ·); ``hs`` (forward() only) holds the very h_t tensors the recurrence
    used, for autograd."""

    logits: torch.Tensor  # (B, T, V)
    hidden: torch.Tensor  # (B, T, H): every h_t
    state: object  # h_T for the RNN, (h_T, C_T) for the LSTM: feed it back to continue
    gates: dict[str, torch.Tensor] = field(default_factory=dict)  # LSTM: name in GATES → (B, T, H)
    hs: list[torch.Tensor] = field(default_factory=list)  # T × (B, H), forward() only


class RNNCell(nn.Module):
    """h_t = tanh(U x_t + W h_{t-1} + b)."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.U = nn.Linear(input_size, hidden_size)  # U x_t + b, for all steps at once
        self.W = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, ux: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, dict]:
        h = torch.tanh(ux + self.W(h))  # (B, H)
        return h, {}


class LSTMCell(nn.Module):
    """The LSTM step of §6.3, gates stacked as (i, f, a, o) rows of U and W (torch.nn.LSTM's i, f, g, o)."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.U = nn.Linear(input_size, 4 * hidden_size)  # U_i, U_f, U_a, U_o and b_i, b_f, b_a, b_o
        self.W = nn.Linear(hidden_size, 4 * hidden_size, bias=False)  # W_i, W_f, W_a, W_o
        with torch.no_grad():  # forget bias 1: remember by default at the start of training (Jozefowicz et al., 2015)
            self.U.bias[hidden_size:2 * hidden_size].fill_(1.0)

    def gates(self, ux: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """i_t, f_t, C̃_t, o_t from U x_t + b and h_{t-1}: one step (B, ·) or all steps at once (B, T, ·)."""
        return self.activate(ux + self.W(h))

    @staticmethod
    def activate(z: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """σ, σ, tanh, σ of the pre-activations z = U x_t + W h_{t-1} + b, stacked (i, f, a, o) on the last axis."""
        z_i, z_f, z_a, z_o = z.chunk(4, dim=-1)  # each (B, H) or (B, T, H)
        return torch.sigmoid(z_i), torch.sigmoid(z_f), torch.tanh(z_a), torch.sigmoid(z_o)

    def forward(self, ux: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        h, c = state
        i, f, a, o = self.gates(ux, h)  # i_t, f_t, C̃_t, o_t
        c = c * f + i * a  # C_t = C_{t-1} ⊙ f_t + i_t ⊙ C̃_t
        h = o * torch.tanh(c)  # h_t = o_t ⊙ tanh(C_t)
        return (h, c), {"input": i, "forget": f, "output": o, "candidate": a, "cell": c}


class RecurrentLM(nn.Module):
    """Embedding → recurrent cell → linear head over the vocabulary."""

    def __init__(self, kind: str, vocab_size: int, embed_size: int = 32, hidden_size: int = 128):
        super().__init__()
        self.kind = kind
        self.config = {"kind": kind, "vocab_size": vocab_size, "embed_size": embed_size, "hidden_size": hidden_size}
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.cell = {"rnn": RNNCell, "lstm": LSTMCell}[kind](embed_size, hidden_size)
        self.head = nn.Linear(hidden_size, vocab_size)

    def initial_state(self, batch: int):
        zeros = torch.zeros(batch, self.cell.hidden_size, device=self.head.weight.device)
        return zeros if self.kind == "rnn" else (zeros, zeros.clone())

    def forward(self, ids: torch.Tensor, state=None) -> Trace:
        B, T = ids.shape
        state = self.initial_state(B) if state is None else state
        ux = self.cell.U(self.embed(ids))  # (B, T, H or 4H): the input half of every gate, for all steps at once
        hs, steps = [], []
        for t in range(T):
            state, gates = self.cell(ux[:, t], state)
            hs.append(state if self.kind == "rnn" else state[0])
            steps.append(gates)
        h = torch.stack(hs, dim=1)  # (B, T, H)
        gates = {name: torch.stack([s[name] for s in steps], dim=1) for name in steps[0]}  # each (B, T, H)
        if gates:
            gates["hidden"] = h
        return Trace(logits=self.head(h), hidden=h, state=state, gates=gates, hs=hs)

    @torch.inference_mode()
    def forward_fused(self, ids: torch.Tensor, keep_gates: bool = True) -> Trace:
        """forward() from the zero state, for display: the same numbers (tested) from a handful of torch calls.

        The recurrence runs in torch's fused RNN/LSTM kernel (torch.rnn_tanh / torch.lstm, what nn.RNN / nn.LSTM
        call) with our weights. That kernel returns only h_t; on the CPU the LSTM's gates are read from the
        kernel's own workspace (kernel_gates), elsewhere (or if that fails) recovered for all steps at once
        (recover_gates). ``keep_gates=False`` skips both (the ladder needs only the logits).
        Why not a per-step loop: every torch call releases and re-takes the GIL, and on a busy server each re-take
        waits for the other threads (a 30-character text took ~0.4 s under load instead of 2 ms).
        """
        B = ids.shape[0]
        x = self.embed(ids.t())  # (T, B, E): time-major, so that every product below is one 2-D matmul
        U, W = self.cell.U, self.cell.W
        h0 = torch.zeros(1, B, self.cell.hidden_size, device=ids.device)  # (layers, B, H)
        weights = [U.weight, W.weight, U.bias, torch.zeros_like(U.bias)]  # nn.LSTM's w_ih, w_hh, b_ih, b_hh
        # args after the weights: biases, 1 layer, no dropout, eval, one direction, time-major (T, B, ·)
        if self.kind == "rnn":
            hidden, h_last = torch.rnn_tanh(x, h0, weights, True, 1, 0.0, False, False, False)  # (T, B, H)
            hidden = hidden.transpose(0, 1)  # (B, T, H)
            return Trace(logits=self.head(hidden), hidden=hidden, state=h_last[0])
        if x.device.type == "cpu" and x.dtype == torch.float32 and torch.backends.mkldnn.is_available():
            # also without gates: the ladder's bits then equal the tab's (the kernel's training mode rounds
            # differently from its inference mode, by ~1e-6)
            hidden, state, gates = self.kernel_gates(x, weights, read_gates=keep_gates)  # (T, B, H)
        else:
            hidden, h_last, c_last = torch.lstm(x, (h0, h0), weights, True, 1, 0.0, False, False, False)  # (T, B, H)
            state, gates = (h_last[0], c_last[0]), {}
        if keep_gates and not gates:
            gates = self.recover_gates(x, hidden)
        hidden = hidden.transpose(0, 1)  # (B, T, H)
        if gates:
            gates["hidden"] = hidden
        return Trace(logits=self.head(hidden), hidden=hidden, state=state, gates=gates)

    def kernel_gates(self, x: torch.Tensor, weights: list[torch.Tensor], read_gates: bool = True):
        """torch.lstm's CPU kernel (oneDNN's LSTM), called directly so that it also hands back its workspace: the
        activated i_t, f_t, C̃_t, o_t and the C_t of every step, as the recurrence computed them (kept there for
        the backward pass). Recovering them instead repeats the kernel's W h_{t-1} arithmetic as one more matmul
        (1.7-2.2× nn.LSTM in all); reading them costs next to nothing (profile in benchmarks/README.md).

        The workspace's layout is oneDNN's, not an API (see workspace_cells), so every call checks what it read
        against the kernel's own outputs (consistent); on a mismatch C_t comes from the gates by cell_scan, and if
        the gates fail too (another layout, no workspace) they are {} and forward_fused recovers them.
        Returns hidden (T, B, H), (h_T, C_T), name in GATES (but "hidden") → (B, T, H) or {}."""
        T, B, E = x.shape
        H = self.cell.hidden_size
        h0 = x.new_zeros(B, H)
        # The kernel returns its workspace only when autograd might need it; nothing here requires grad.
        with torch.inference_mode(False), torch.enable_grad():
            hidden, h_last, c_last, workspace = torch.mkldnn_rnn_layer(
                x, *(w.detach() for w in weights), h0, h0,
                False, [], 2, H, 1, True, False, False, True)  # forward, LSTM (mode 2), 1 layer, biases, training
        ld = good_ld(4 * H)  # one row of gates per (t, b), i f C̃ o in our order, padded to ld floats
        if not read_gates or workspace is None or workspace.numel() < T * B * ld * 4:
            return hidden, (h_last, c_last), {}
        z = workspace[:T * B * ld * 4].view(torch.float32).view(T, B, ld)  # (T, B, ld)
        i, f, a, o = (z[..., k * H:(k + 1) * H] for k in range(4))  # each (T, B, H)
        cells = workspace_cells(workspace, T, B, E, H, c_last)  # (T, B, H) or None
        if cells is None or not consistent(i, f, a, o, cells, h_last, c_last):
            cells = cell_scan(f, i * a)  # (T, B, H)
            if not consistent(i, f, a, o, cells, h_last, c_last):
                return hidden, (h_last, c_last), {}
        return hidden, (h_last, c_last), {name: g.transpose(0, 1) for name, g in
                                          (("input", i), ("forget", f), ("output", o), ("candidate", a),
                                           ("cell", cells))}  # each (B, T, H)

    def recover_gates(self, x: torch.Tensor, hidden: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every gate and cell state of every step, from the inputs x (T, B, E) and the kernel's h_t (T, B, H).

        Every gate of step t is a function of x_t and h_{t-1}, so
            z_t = U x_t + b + W h_{t-1}        two matmuls for all steps at once (time-major: one 2-D product each)
            i, f, C̃, o = σ, σ, tanh, σ of z_t   in place, one call per block of z
            C_t = C_{t-1} ⊙ f_t + i_t ⊙ C̃_t    an elementwise scan from C_0 = 0
        The path on a GPU, and on the CPU if the kernel's workspace cannot be read (kernel_gates): the W h_{t-1}
        product repeats, as one large matmul, the arithmetic the kernel did step by step (1.7-2.2× nn.LSTM).
        Returns name in GATES (but "hidden") → (B, T, H)."""
        T, B, E = x.shape
        H = self.cell.hidden_size
        U, W = self.cell.U, self.cell.W
        z = torch.addmm(U.bias, x.reshape(T * B, E), U.weight.t())  # (T·B, 4H): U x_t + b
        z[B:].addmm_(hidden[:-1].reshape((T - 1) * B, H), W.weight.t())  # + W h_{t-1}, from t = 2 on (h_0 = 0)
        z = z.view(T, B, 4 * H)
        z[..., :2 * H].sigmoid_()  # i_t, f_t
        z[..., 2 * H:3 * H].tanh_()  # C̃_t
        z[..., 3 * H:].sigmoid_()  # o_t
        i, f, a, o = (z[..., k * H:(k + 1) * H] for k in range(4))  # each (T, B, H)
        cells = cell_scan(f, i * a)  # (T, B, H)
        return {name: g.transpose(0, 1) for name, g in
                (("input", i), ("forget", f), ("output", o), ("candidate", a), ("cell", cells))}  # each (B, T, H)


def good_ld(n: int) -> int:
    """oneDNN's row length for n floats: rounded up to 16 (64 bytes), plus 16 when a multiple of 256."""
    ld = -(-n // 16) * 16
    return ld + 16 if ld % 256 == 0 else ld


def workspace_cells(workspace: torch.Tensor, T: int, B: int, E: int, H: int, c_last: torch.Tensor):
    """C_0 … C_{T-1} (T, B, H) from oneDNN's LSTM workspace, as torch 2.13's oneDNN 3.12 lays it out (found by
    probing 12 shapes; the caller checks every use): sections start on 4 KiB pages: the gates (T·B rows of
    good_ld(4H)), h_t of layers 0 and 1 (2·(T+1)·B rows of good_ld(max(E, H))), T·B rows of good_ld(H), then C_t
    of layers 0 and 1, (T+1)·B rows of H floats each, where layer 1's row t+1 is C_t. The last step's C_t is
    written only to the kernel's output, c_last. None if the workspace is too short for that."""
    def pages(n: int) -> int:  # floats → whole 4 KiB pages
        return -(-n // 1024) * 1024

    first = (pages(T * B * good_ld(4 * H)) + pages(2 * (T + 1) * B * good_ld(max(E, H))) + pages(T * B * good_ld(H))
             + (T + 2) * B * H)  # layer 1's row 1: C_0
    end = first + (T - 1) * B * H
    if workspace.numel() < end * 4:
        return None
    return torch.cat([workspace.view(torch.float32)[first:end].view(T - 1, B, H), c_last[None]])  # (T, B, H)


def consistent(i, f, a, o, cells, h_last, c_last, atol: float = 1e-5) -> bool:
    """Whether gates and cells read from a workspace are the kernel's: C_0 = i_0 ⊙ C̃_0, the last step's
    C_T = f_T ⊙ C_{T-1} + i_T ⊙ C̃_T and h_T = o_T ⊙ tanh(C_T) with the kernel's C_T and h_T. cell_scan's C_T sums
    every step's i ⊙ C̃ through the f's, so a wrong row length or offset cannot pass either."""
    before = cells[-2] if len(cells) > 1 else torch.zeros_like(c_last)
    pairs = ((cells[0], i[0] * a[0]), (cells[-1], c_last), (c_last, f[-1] * before + i[-1] * a[-1]),
             (h_last, o[-1] * torch.tanh(c_last)))
    return all(float((p - q).abs().max()) <= atol for p, q in pairs)


def cell_scan(f: torch.Tensor, update: torch.Tensor) -> torch.Tensor:
    """C_t = C_{t-1} ⊙ f_t + update_t from C_0 = 0, for time-major (T, B, H) inputs; returns every C_t, (T, B, H).

    On the CPU a loop over rows of numpy views of the tensors (``Tensor.numpy()``, no copy): ~1 µs a step, and small
    numpy operations keep the GIL (each torch call would give it up and wait to get it back on a busy server)."""
    if f.device.type != "cpu":
        # On a GPU, T tiny kernels cost ~15 µs each (5.8× nn.LSTM on an H100 for 300 steps); the same scan on a
        # CPU copy of two (T, B, H) tensors takes well under a millisecond, transfers included.
        return cell_scan(f.cpu(), update.cpu()).to(f.device)
    T = len(f)
    forget = f.contiguous().view(T, -1).numpy()  # (T, B·H): a copy only if f is a strided view
    cells = update.view(T, -1).numpy()  # update is a fresh tensor: overwritten in place with C_t
    rows, forget_rows = list(cells), list(forget)  # the row views made once, not twice per step
    for before, f_t, c_t in zip(rows, forget_rows[1:], rows[1:]):
        c_t += before * f_t
    return update
