"""The Duo translator against the vanilla Transformer on gettext messages.

The Duo paper's §4.2 at small scale. English → French and English → German
message pairs are read from the gettext catalogues installed on the machine
(:func:`sklearn_lama.datasets.load_gettext`: 3-40 words, deduplicated, hash
split 90/10). Every model is a :class:`~sklearn_lama.DuoTranslator` of the
same width and depth, trained for the same wall-clock budget on the CPU
(``max_time``, validation included) with the same schedule and seed; the
vanilla Transformer is the same code with the four Duo flags off. Per epoch:
validation perplexity (unsmoothed, per target subword, on the 10 % of the
training pairs held out) and greedy BLEU on a fixed part of the test split
(the paper's Fig. 3 and Tables 7-8). At the end: greedy BLEU on the whole
test split (sacrebleu, 13a). The Table 6 ablation adds the flags one at a
time on English → French, with a control: the Transformer started from the
word2vec vectors that Duo's streams start from.
"""

from ._harness import run_cell
from ._report import Report, sig

NAME = "translation"
OPTIONS = {"threads": "torch threads of every model's training"}
FLAGS = ("meta_embeddings", "weight_sharing", "duo_norm", "fusion")
ROWS = (
    ("transformer", "Transformer (all flags off)", 0),
    ("transformer_w2v", "Transformer, word2vec start (control)", 0),
    ("meta", "+ meta embeddings", 1),
    ("sharing", "+ weight sharing in Duo multi-head", 2),
    ("norm", "+ Duo normalisation", 3),
    ("duo", "+ fusion layer (Duo)", 4),
)
LABELS = {key: label for key, label, _ in ROWS}
# Every row starts as embedding_init="auto" does (word2vec with meta embeddings, else random)
# except the control, which asks whether the Transformer gains from the same start vectors.
INITS = {"transformer_w2v": "word2vec"}
SIZES = {
    "quick": {
        "languages": ["fr"],
        "budget_s": 20,
        "ablation": False,
        "train_limit": 2000,
        "curve_limit": 50,
        "test_limit": 100,
        "model": {
            "d_model": 64,
            "n_heads": 4,
            "d_ff": 128,
            "n_layers": 1,
            "vocab_size": 1000,
            "warmup_steps": 100,
        },
    },
    "full": {
        "languages": ["fr", "de"],
        "budget_s": 300,
        "ablation": True,
        "train_limit": None,
        "curve_limit": 200,
        "test_limit": 1000,
        "model": {
            "d_model": 128,
            "n_heads": 4,
            "d_ff": 512,
            "n_layers": 2,
            "vocab_size": 4000,
            "warmup_steps": 100,
            "lr": 2e-3,
            "max_batch_tokens": 1024,
        },
    },
}
TARGET_FR_BLEU = 30.0


def cell(
    language, model_key, budget_s, train_limit, curve_limit, test_limit, model, directory=None
):
    """Train one model for ``budget_s`` seconds and measure it (child process).

    ``directory``: where the gettext catalogues are (``load_gettext``'s; None: the system's).
    """
    import time

    import sacrebleu
    from skorch.callbacks import Callback

    from sklearn_lama import DuoTranslator
    from sklearn_lama.datasets import load_gettext
    from sklearn_lama.translation._subwords import PLACEHOLDER

    bunch = load_gettext(language, directory=directory)
    test = load_gettext(language, subset="test", directory=directory)
    X, y = bunch.data[:train_limit], bunch.target[:train_limit]
    X_test, y_test = test.data[:test_limit], test.target[:test_limit]
    steps = dict(ROWS_STEPS)[model_key]
    flags = {flag: i < steps for i, flag in enumerate(FLAGS)}
    curve_X, curve_y = X_test[:curve_limit], y_test[:curve_limit]
    curve = []

    class BleuCurve(Callback):
        """Greedy BLEU on the curve pairs after every epoch (not counted in ``max_time``)."""

        def on_epoch_end(self, net, **kwargs):
            start = time.perf_counter()
            hyp = list(translator.predict(curve_X))
            curve.append(
                {
                    "epoch": net.history[-1, "epoch"],
                    "bleu": sacrebleu.corpus_bleu(hyp, [curve_y]).score,
                    "eval_s": time.perf_counter() - start,
                }
            )

    max_epochs = 1000
    translator = DuoTranslator(
        **model,
        **flags,
        embedding_init=INITS.get(model_key, "auto"),
        beam_size=1,
        max_time=budget_s,
        max_epochs=max_epochs,
        # Validation every epoch and the best epoch kept, but no stop before the budget's.
        patience=max_epochs,
        random_state=0,
        # The threads the harness gave this process.
        torch_threads=-1,
        callbacks=[BleuCurve()],
    )
    start = time.perf_counter()
    translator.fit(X, y)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    hyp = list(translator.predict(X_test))
    predict_s = time.perf_counter() - start
    bleu = sacrebleu.corpus_bleu(hyp, [y_test]).score
    with_placeholders = [(h, r) for h, r in zip(hyp, y_test) if PLACEHOLDER.search(r)]
    kept = sum(
        sorted(PLACEHOLDER.findall(h)) == sorted(PLACEHOLDER.findall(r))
        for h, r in with_placeholders
    )
    return {
        "language": language,
        "model": model_key,
        "flags": flags,
        "n_train": len(X),
        "n_test": len(X_test),
        "n_catalogues": bunch.n_catalogues,
        "n_catalogues_installed": len(bunch.catalogues),
        "n_parameters": translator.n_parameters_,
        "history": _history(translator.history_),
        "curve": curve,
        "best_epoch": translator.best_epoch_,
        "fit_s": fit_s,
        "predict_s": predict_s,
        "test_bleu": bleu,
        "test_with_placeholders": len(with_placeholders),
        "placeholders_kept": kept,
        "examples": [[s, r, h] for s, r, h in list(zip(X_test, y_test, hyp))[:5]],
    }


ROWS_STEPS = [(key, steps) for key, _, steps in ROWS]


def _history(history):
    """Per epoch: losses, validation perplexity, updates so far and training seconds so far."""
    steps = 0
    rows = []
    for record in history:
        steps += record["train_batch_count"]
        rows.append(
            {
                "epoch": record["epoch"],
                "train_loss": float(record["train_loss"]),
                "valid_loss": float(record["valid_loss"]),
                "valid_perplexity": record["valid_perplexity"],
                "steps": steps,
                "seconds": record["seconds"],
            }
        )
    return rows


def run(cfg, threads, corpora, log):
    cells = [(lang, key) for lang in cfg["languages"] for key in ("transformer", "duo")]
    if cfg["ablation"]:
        cells += [
            (cfg["languages"][0], key) for key in ("transformer_w2v", "meta", "sharing", "norm")
        ]
    rows = []
    for lang, key in cells:
        r = run_cell(
            "benchmarks.translation:cell",
            threads,
            {
                "language": lang,
                "model_key": key,
                "budget_s": cfg["budget_s"],
                "train_limit": cfg["train_limit"],
                "curve_limit": cfg["curve_limit"],
                "test_limit": cfg["test_limit"],
                "model": cfg["model"],
            },
        )
        r.setdefault("language", lang)
        r.setdefault("model", key)
        if "error" in r:
            log(f"en-{lang} {key:11s} FAILED {r['error']}")
        else:
            h = r["history"][-1]
            log(
                f"en-{lang} {key:11s} {len(r['history'])} epochs, {h['steps']} steps, "
                f"valid ppl {min(x['valid_perplexity'] for x in r['history']):.2f}, "
                f"test BLEU {r['test_bleu']:.2f}"
            )
        rows.append(r)
    return {"name": NAME, "config": {**cfg, "threads": threads}, "results": rows}


def _best_ppl(r):
    return min(x["valid_perplexity"] for x in r["history"])


def _epochs_to(r, ppl):
    """First epoch whose validation perplexity is at most ``ppl`` (None if never)."""
    return next((x["epoch"] for x in r["history"] if x["valid_perplexity"] <= ppl), None)


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    ok = [r for r in rows if "error" not in r]
    rep = Report(payload["name"], "Duo translator vs the Transformer on gettext messages")
    m = cfg["model"]
    # Results saved before the translator took the classifiers' parameter names use the old ones.
    lr = m.get("lr", m.get("learning_rate", 1e-3))
    batch_tokens = m.get("max_batch_tokens", m.get("max_tokens", 4096))
    rep.text(
        f"Every model: DuoTranslator with d_model={m['d_model']} per stream, "
        f"{m['n_layers']}+{m['n_layers']} layers, d_ff={m['d_ff']}, {m['n_heads']} heads, BPE "
        f"vocabulary {m['vocab_size']} per side, warm-up {m['warmup_steps']} steps, peak "
        f"learning rate {lr:g}, batches of {batch_tokens} "
        f"padded tokens, random_state=0, trained for {cfg['budget_s']} s of wall-clock time on "
        f"the CPU with {cfg['threads']} torch thread(s) (word2vec start vectors and validation "
        "passes included, BLEU measurements excluded). The Transformer is the same code with "
        "the four Duo flags off. Models with meta embeddings start their subword tables from "
        "word2vec vectors trained on the training pairs (CBOW for one stream, skip-gram for the "
        "other; embedding_init='auto'), the others from random tables; the control row starts "
        "the Transformer from the CBOW vectors. BLEU: sacrebleu corpus BLEU (13a), greedy "
        "decoding, on "
        + (
            "the test split"
            if cfg["test_limit"] is None
            else f"the first {cfg['test_limit']:,} pairs of the "
            "test split (its order is a hash of the pairs)"
        )
        + f"; the per-epoch curve uses its first {cfg['curve_limit']} pairs. Perplexity: exp "
        "of the unsmoothed validation cross-entropy per target subword (10 % of the training "
        "pairs held out)."
    )
    if ok:
        facts = {}
        for r in ok:
            facts.setdefault(r["language"], r)
        rep.bullets(
            [
                f"English → {lang}: {r['n_train']:,} training and {r['n_test']:,} test pairs from "
                f"{r['n_catalogues']} of the {r['n_catalogues_installed']} catalogues installed; "
                f"{r['test_with_placeholders']:,} test references hold a format placeholder"
                for lang, r in facts.items()
            ]
        )
    order = [key for key, _, _ in ROWS]
    table = []
    for r in sorted(rows, key=lambda r: (r["language"], order.index(r["model"]))):
        if "error" in r:
            table.append(
                [f"en-{r['language']}", LABELS[r["model"]], "failed: " + r["error"][:60]]
                + [""] * 6
            )
            continue
        table.append(
            [
                f"en-{r['language']}",
                LABELS[r["model"]],
                f"{r['n_parameters'] / 1e6:.2f} M",
                str(len(r["history"])),
                f"{r['history'][-1]['steps']:,}",
                sig(_best_ppl(r)),
                f"{r['best_epoch']}",
                f"{r['test_bleu']:.2f}",
                f"{r['placeholders_kept']}/{r['test_with_placeholders']}",
            ]
        )
    rep.table(
        [
            "pair",
            "model",
            "parameters",
            "epochs",
            "steps",
            "best valid ppl",
            "best epoch",
            "test BLEU",
            "placeholders kept",
        ],
        table,
    )

    verdicts = []
    for lang in cfg["languages"]:
        by = {r["model"]: r for r in ok if r["language"] == lang}
        if "duo" in by and "transformer" in by:
            duo, van = by["duo"], by["transformer"]
            diff = duo["test_bleu"] - van["test_bleu"]
            reach = _epochs_to(duo, _best_ppl(van))
            verdicts.append(
                f"en-{lang}: Duo {duo['test_bleu']:.2f} vs Transformer {van['test_bleu']:.2f} "
                f"BLEU ({diff:+.2f}; target Duo >= Transformer: "
                f"{'met' if diff >= 0 else 'missed'}). The Transformer's best validation "
                f"perplexity ({sig(_best_ppl(van))}, epoch {_epochs_to(van, _best_ppl(van))} of "
                f"{len(van['history'])}) is reached by Duo "
                + (
                    f"at epoch {reach} of {len(duo['history'])}."
                    if reach
                    else f"in none of its epochs (its best: {sig(_best_ppl(duo))})."
                )
            )
        if lang == "fr" and "duo" in by:
            b = by["duo"]["test_bleu"]
            verdicts.append(
                f"en-fr target BLEU >= {TARGET_FR_BLEU:g} after at most 30 min: Duo reaches "
                f"{b:.2f} after {cfg['budget_s']} s "
                f"({'met' if b >= TARGET_FR_BLEU else 'missed'}"
                + ("" if b >= TARGET_FR_BLEU else f" by {TARGET_FR_BLEU - b:.2f}")
                + (
                    ")."
                    if cfg["budget_s"] >= 1800
                    else " at this budget; the 30-minute runs are on the Translation page)."
                )
            )
    rep.bullets(verdicts)

    for lang in cfg["languages"]:
        by = {r["model"]: r for r in ok if r["language"] == lang}
        if "duo" not in by or "transformer" not in by:
            continue
        n = max(len(by["duo"]["history"]), len(by["transformer"]["history"]))
        per_epoch = []
        for e in range(n):
            line = [str(e + 1)]
            for key in ("transformer", "duo"):
                hist, curve = by[key]["history"], by[key]["curve"]
                line += (
                    [
                        sig(hist[e]["valid_perplexity"]),
                        f"{curve[e]['bleu']:.2f}",
                        f"{hist[e]['seconds']:.0f}",
                    ]
                    if e < len(hist) and e < len(curve)
                    else ["", "", ""]
                )
            per_epoch.append(line)
        rep.text(
            f"Per epoch, en-{lang} (BLEU on the first {cfg['curve_limit']} test pairs; s = "
            "training seconds so far; the last epoch may be cut short by the budget):"
        )
        rep.table(
            ["epoch", "Transformer ppl", "Transformer BLEU", "s", "Duo ppl", "Duo BLEU", "s"],
            per_epoch,
        )
    return rep, _plotter(ok, cfg["languages"])


def _plotter(rows, languages):
    def plot(fig):
        ax_ppl, ax_bleu = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        styles = {
            "transformer": "--",
            "transformer_w2v": "-.",
            "meta": ":",
            "sharing": ":",
            "norm": ":",
            "duo": "-",
        }
        for r in rows:
            if r["model"] not in ("transformer", "duo") and len(languages) > 1:
                continue
            label = f"en-{r['language']} {LABELS[r['model']]}"
            secs = [x["seconds"] for x in r["history"]]
            ax_ppl.plot(
                secs,
                [x["valid_perplexity"] for x in r["history"]],
                styles[r["model"]],
                marker="o",
                markersize=3,
                label=label,
            )
            n = min(len(secs), len(r["curve"]))
            ax_bleu.plot(
                secs[:n],
                [c["bleu"] for c in r["curve"][:n]],
                styles[r["model"]],
                marker="o",
                markersize=3,
                label=label,
            )
        ax_ppl.set(
            title="validation perplexity",
            xlabel="training seconds",
            ylabel="perplexity",
            yscale="log",
        )
        ax_bleu.set(
            title="test BLEU (greedy, curve subset)", xlabel="training seconds", ylabel="BLEU"
        )
        for ax in (ax_ppl, ax_bleu):
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)

    return plot
