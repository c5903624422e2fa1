"""Parameters against attention heads: LAMA vs a Transformer encoder.

Table 5 of Mehta & Rangwala, "Compact Multi-Head Self-Attention for Learning
Supervised Text Representations".

The paper's setup: BiGRU hidden size and ``d_model`` both 512, classifier
hidden layer 1024, heads 2, 4, ..., 64. Both models are the package's real
modules, built on the ``meta`` device (shapes only, nothing allocated):

* LAMA: ``SequenceNetwork(LAMAModule(100, C, n_heads=m, hidden_size=512,
  mlp_hidden=1024))`` over a 100-d embedding table (the paper's word2vec size);
* TE: ``SequenceNetwork(TransformerEncoderClassifier(512, C, n_heads=m,
  mlp_hidden=1024, max_length=512))`` with its own 512-d embedding table and
  learned positions (the paper counts position-embedding parameters).

The vocabulary is that of ``Word2VecVectorizer()`` on the R8 training split
(the paper does not give its own); counts are reported with and without the
embedding tables so that the vocabulary's share is visible.
"""

import torch

from ._report import Report

NAME = "params_vs_heads"
# Counts, not timings: the part reads no option of its own.
OPTIONS = {}
SIZES = {"quick": {"heads": [2, 4, 8, 16, 32, 64]}, "full": {"heads": [2, 4, 8, 16, 32, 64]}}
# Table 5 of the LAMA paper (Mehta & Rangwala), millions of parameters.
PAPER = {
    2: (6.403, 18.465),
    4: (6.405, 18.465),
    8: (6.409, 18.465),
    16: (6.418, 18.465),
    32: (6.434, 18.465),
    64: (6.468, 18.465),
}
WORD_DIM, WIDTH, MLP, MAX_LENGTH = 100, 512, 1024, 512


def _count(module):
    return sum(p.numel() for p in module.parameters())


def _vocabulary_size():
    from sklearn_lama import Word2VecVectorizer
    from sklearn_lama.datasets import load_r8

    texts, labels = load_r8(return_X_y=True)
    # The table's row count depends on the vocabulary only: tiny, fast vectors.
    vectorizer = Word2VecVectorizer(vector_size=4, epochs=1, random_state=0).fit(texts)
    return vectorizer.embedding_.shape[0], len(set(labels))


def count(heads, vocabulary, n_classes):
    """Parameter counts of both models with ``heads`` attention heads."""
    from sklearn_lama.modules import LAMAModule, SequenceNetwork

    from ._baselines import TransformerEncoderClassifier

    with torch.device("meta"):
        lama = SequenceNetwork(
            LAMAModule(WORD_DIM, n_classes, n_heads=heads, hidden_size=WIDTH, mlp_hidden=MLP),
            vocabulary_size=vocabulary,
            embedding_dim=WORD_DIM,
        )
        te = SequenceNetwork(
            TransformerEncoderClassifier(
                WIDTH, n_classes, n_heads=heads, mlp_hidden=MLP, max_length=MAX_LENGTH
            ),
            vocabulary_size=vocabulary,
            embedding_dim=WIDTH,
        )
    row = {"heads": heads}
    for name, net, attention in (
        ("lama", lama, lama.core.attention),
        ("te", te, [layer.self_attn for layer in te.core.encoder.layers]),
    ):
        attention = attention if isinstance(attention, list) else [attention]
        total = _count(net)
        row[name] = {
            "attention": sum(_count(a) for a in attention),
            "without_embedding": total - _count(net.lookups),
            "total": total,
        }
    return row


def run(cfg, threads, corpora, log):
    vocabulary, n_classes = _vocabulary_size()
    rows = [count(m, vocabulary, n_classes) for m in cfg["heads"]]
    for r in rows:
        log(f"heads {r['heads']:3d}: LAMA {r['lama']['total']:>11,}  TE {r['te']['total']:>11,}")
    return {
        "name": NAME,
        "results": rows,
        "config": {
            **cfg,
            "vocabulary": vocabulary,
            "n_classes": n_classes,
            "word_dim": WORD_DIM,
            "width": WIDTH,
            "mlp_hidden": MLP,
            "max_length": MAX_LENGTH,
        },
    }


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    rows = payload["results"]
    return _report(rows, payload["config"]["vocabulary"]), _plotter(rows)


def _m(n):
    return f"{n / 1e6:.3f}"


def _report(rows, vocabulary):
    rep = Report(
        NAME, "Parameters vs attention heads: LAMA vs Transformer encoder (LAMA paper, Table 5)"
    )
    rep.text(
        "Setup of the paper's Table 5: LAMA+ctx with BiGRU hidden size 512 over 100-d word "
        f"vectors, TE with d_model 512, 4 x d_model feed-forward, {MAX_LENGTH} learned positions "
        f"and its own 512-d embedding table; both with a classifier hidden layer of {MLP}. "
        f"Vocabulary: {vocabulary:,} rows (R8 training split, Word2VecVectorizer defaults). "
        "Millions of parameters; TE/LAMA is the ratio of whole models."
    )
    rep.table(
        [
            "heads",
            "LAMA attention",
            "TE attention",
            "LAMA w/o emb.",
            "TE w/o emb.",
            "LAMA total",
            "TE total",
            "TE/LAMA",
            "paper LAMA",
            "paper TE",
            "paper TE/LAMA",
        ],
        [
            [
                str(r["heads"]),
                _m(r["lama"]["attention"]),
                _m(r["te"]["attention"]),
                _m(r["lama"]["without_embedding"]),
                _m(r["te"]["without_embedding"]),
                _m(r["lama"]["total"]),
                _m(r["te"]["total"]),
                f"{r['te']['total'] / r['lama']['total']:.2f}",
                f"{PAPER[r['heads']][0]:.3f}" if r["heads"] in PAPER else "n/a",
                f"{PAPER[r['heads']][1]:.3f}" if r["heads"] in PAPER else "n/a",
                f"{PAPER[r['heads']][1] / PAPER[r['heads']][0]:.2f}"
                if r["heads"] in PAPER
                else "n/a",
            ]
            for r in rows
        ],
    )
    rep.bullets(_findings(rows))
    return rep


def _findings(rows):
    first, last = rows[0], rows[-1]
    span = last["heads"] - first["heads"]
    per_head_attention = (last["lama"]["attention"] - first["lama"]["attention"]) / span
    per_head_total = (last["lama"]["total"] - first["lama"]["total"]) / span
    te_constant = len({r["te"]["total"] for r in rows}) == 1
    crossover = [r["heads"] for r in rows if r["lama"]["total"] > r["te"]["total"]]
    implied = (PAPER[2][1] * 1e6 - first["te"]["without_embedding"]) / WIDTH
    lama_implied = first["lama"]["without_embedding"] + implied * WORD_DIM
    return [
        f"LAMA's attention layer grows linearly, by {per_head_attention:,.0f} parameters per "
        "head (only P and Q depend on the heads), as the paper says; TE's attention is constant "
        f"({first['te']['attention']:,}).",
        f"TE's whole model is {'constant' if te_constant else 'not constant'} in the number of "
        "heads, as in the paper.",
        f"LAMA's whole model grows by {per_head_total:,.0f} parameters per head: the MLP reads "
        "the flattened m x 2h matrix embedding (Eq. 15-16), so its first layer has m x 1024 x "
        "1024 weights. The paper's totals grow by about 1,000 per head, so its classifier "
        "cannot have read the flattened matrix.",
        "Claim '~3x more compact than TE': TE/LAMA is "
        f"{first['te']['total'] / first['lama']['total']:.2f} at {first['heads']} heads and "
        f"{last['te']['total'] / last['lama']['total']:.2f} at {last['heads']}; "
        + (
            f"LAMA is larger from {crossover[0]} heads on. "
            if crossover
            else "LAMA stays smaller throughout. "
        )
        + "Without embeddings TE/LAMA is "
        f"{first['te']['without_embedding'] / first['lama']['without_embedding']:.2f} at "
        f"{first['heads']} heads.",
        f"The paper's TE total ({PAPER[2][1]}M) equals this TE's "
        f"{first['te']['without_embedding'] / 1e6:.3f}M without embeddings plus a 512-d table of "
        f"about {implied:,.0f} words; with that vocabulary LAMA at {first['heads']} heads has "
        f"{lama_implied / 1e6:.3f}M parameters (TE/LAMA {PAPER[2][1] * 1e6 / lama_implied:.2f}): "
        "the paper's ~3x comes from the embedding widths (512 vs 100) and a classifier that "
        "does not grow with the heads.",
    ]


def _plotter(rows):
    def plot(fig):
        heads = [r["heads"] for r in rows]
        ax = fig.add_subplot(1, 1, 1)
        for model, colour, label in (("lama", "tab:blue", "LAMA"), ("te", "tab:green", "TE")):
            ax.plot(
                heads,
                [r[model]["total"] / 1e6 for r in rows],
                "o-",
                color=colour,
                label=f"{label} total",
            )
            ax.plot(
                heads,
                [r[model]["without_embedding"] / 1e6 for r in rows],
                "s--",
                color=colour,
                label=f"{label} without embeddings",
            )
            ax.plot(
                heads,
                [r[model]["attention"] / 1e6 for r in rows],
                "^:",
                color=colour,
                label=f"{label} attention layer",
            )
        paper = [h for h in heads if h in PAPER]
        ax.plot(
            paper,
            [PAPER[h][0] for h in paper],
            "x",
            color="tab:blue",
            ms=9,
            label="paper LAMA (Table 5)",
        )
        ax.plot(
            paper,
            [PAPER[h][1] for h in paper],
            "x",
            color="tab:green",
            ms=9,
            label="paper TE (Table 5)",
        )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="attention heads",
            ylabel="parameters (millions)",
            title="Parameters vs heads (BiGRU hidden = d_model = 512, classifier hidden 1024)",
        )
        ax.set_xticks(heads, [str(h) for h in heads])
        ax.minorticks_off()
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)

    return plot
