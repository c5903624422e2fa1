"""The side benchmark's data and report."""

from benchmarks import side


def test_the_shipped_reviews_split_two_to_one_with_every_column():
    train, test = side.load()
    assert (len(train), len(test)) == (4000, 2000)
    columns = {side.TEXT, *side.NUMERIC, *side.CATEGORICAL, side.TARGET}
    assert columns <= set(train.columns)
    assert abs(train[side.TARGET].mean() - test[side.TARGET].mean()) < 0.001


def test_the_report_compares_text_alone_with_text_and_side():
    rows = [
        {"model": m, "seed": s, "columns": c, "accuracy": a, "macro_f1": a - 0.1}
        for m, seeds in (("tfidf_lr", [0]), ("fcsr", [0, 1]))
        for s in seeds
        for c, a in (("text", 0.88), ("side", 0.93 if m == "fcsr" else 0.92))
    ]
    config = {"n_train": 4000, "n_test": 2000, "max_epochs": None, "seeds": [0, 1]}
    report, _ = side.render({"name": "side", "config": config, "results": rows})
    bullets = [b for kind, *body in report.blocks if kind == "bullets" for b in body[0]]
    assert bullets[1] == (
        "FCSR: side features help (0.8800 → 0.9300); beats TF-IDF+LR with the same "
        "columns (0.9200)."
    )
