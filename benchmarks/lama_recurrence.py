"""LAMA's recurrence: the fused ``torch.gru`` of width ``2h`` against its two ``nn.GRU`` modules.

``python -m benchmarks.lama_recurrence`` times a training step (forward and
backward) of :class:`~sklearn_lama.modules.BiGRUEncoder` on an MR-sized batch
(32 documents of up to 23 tokens, 66-dimensional vectors: GloVe 50 and the
Naive Bayes features), one thread, the two forms alternated over 15 rounds of
20 steps, and prints each form's median and their ratio (the architecture
page's "Decisions").
"""

import statistics
import time

import torch

from sklearn_lama.modules import BiGRUEncoder

BATCH, LENGTH, INPUT, HIDDEN = 32, 23, 66, 50
ROUNDS, STEPS = 15, 20


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    encoder = BiGRUEncoder(INPUT, HIDDEN).train()
    x = torch.randn(BATCH, LENGTH, INPUT)
    lengths = torch.randint(5, LENGTH + 1, (BATCH,))
    lengths[0] = LENGTH
    mask = torch.arange(LENGTH) < lengths[:, None]
    rows = torch.arange(BATCH).unsqueeze(1) * LENGTH
    index = (encoder._reverse_index(mask) + rows).reshape(-1)

    def fused():
        encoder(x, mask).sum().backward()

    def modules():
        # Each direction's nn.GRU called on its own input (the backward one reversed).
        reversed_x = x.reshape(BATCH * LENGTH, -1).index_select(0, index).view(x.shape)
        forward_states, _ = encoder.forward_gru(x)
        backward_states, _ = encoder.backward_gru(reversed_x)
        backward_states = backward_states.reshape(BATCH * LENGTH, -1).index_select(0, index)
        torch.cat([forward_states, backward_states.view(BATCH, LENGTH, -1)], -1).sum().backward()

    forms = {"fused": fused, "modules": modules}
    for step in forms.values():
        for _ in range(STEPS):
            step()
    times = {name: [] for name in forms}
    for _ in range(ROUNDS):
        for name, step in forms.items():
            start = time.perf_counter()
            for _ in range(STEPS):
                step()
            times[name].append((time.perf_counter() - start) / STEPS)
    fused_s, modules_s = (statistics.median(times[name]) for name in forms)
    print(
        f"fused {fused_s * 1e3:.2f} ms, two modules {modules_s * 1e3:.2f} ms per step: "
        f"{modules_s / fused_s:.2f} times"
    )


if __name__ == "__main__":
    main()
