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
    """One forward pass. Tensors are (B, T, ·); ``hs`` holds the very h_t the recurrence used (for autograd)."""

    logits: torch.Tensor  # (B, T, V)
    hs: list[torch.Tensor]  # T × (B, H)
    state: object  # h_T for the RNN, (h_T, C_T) for the LSTM: feed it back to continue
    gates: dict[str, torch.Tensor] = field(default_factory=dict)  # LSTM: name in GATES → (B, T, H)


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
        z_i, z_f, z_a, z_o = (ux + self.W(h)).chunk(4, dim=-1)  # each (B, H) or (B, T, H)
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
        return Trace(logits=self.head(h), hs=hs, state=state, gates=gates)

    @torch.inference_mode()
    def forward_fused(self, ids: torch.Tensor) -> Trace:
        """forward() from the zero state, for display: the same numbers (tested) from ~10× fewer torch calls.

        The recurrence runs in torch's fused cell kernels (one call per step instead of ~12), then the LSTM's gates
        are recomputed for all steps at once from h_{t-1}. Why: every torch call releases and re-takes the GIL, and
        on a busy server each re-take waits for the other threads, so the step loop's ~400 small calls on a
        30-character text took ~0.4 s under load instead of 2 ms.
        """
        B, T = ids.shape
        x = self.embed(ids)  # (B, T, E)
        U, W = self.cell.U, self.cell.W
        h = c = torch.zeros(B, self.cell.hidden_size, device=ids.device)
        hs, cs = [], []
        for x_t in x.unbind(1):  # x_t: (B, E)
            if self.kind == "rnn":
                h = torch.rnn_tanh_cell(x_t, h, U.weight, W.weight, U.bias)  # tanh(U x_t + b + W h_{t-1})
            else:
                h, c = torch.lstm_cell(x_t, (h, c), U.weight, W.weight, U.bias)  # gate order i, f, g(= C̃), o
                cs.append(c)
            hs.append(h)
        hidden = torch.stack(hs, dim=1)  # (B, T, H)
        if self.kind == "rnn":
            return Trace(logits=self.head(hidden), hs=hs, state=h)
        h_prev = torch.cat([torch.zeros_like(hidden[:, :1]), hidden[:, :-1]], dim=1)  # (B, T, H): h_{t-1}
        i, f, a, o = self.cell.gates(U(x), h_prev)  # each (B, T, H)
        gates = {"input": i, "forget": f, "output": o, "candidate": a, "cell": torch.stack(cs, dim=1),
                 "hidden": hidden}
        return Trace(logits=self.head(hidden), hs=hs, state=(h, c), gates=gates)
