"""DuoTranslator: learning, decoding, placeholders, scikit-learn API, persistence, bad input."""

import io

import joblib
import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_lama import DuoTranslator, MetaEmbeddingTransformer, Word2VecVectorizer
from sklearn_lama.translation._decoding import beam_search, greedy_search
from sklearn_lama.translation._subwords import (
    BOS_ID,
    EOS_ID,
    protect_placeholders,
    restore_placeholders,
)

VERBS = [("open", "ouvrir"), ("close", "fermer"), ("delete", "supprimer"), ("save", "enregistrer")]
NOUNS = [("the file", "le fichier"), ("the window", "la fenêtre"), ("the folder", "le dossier")]
EN = [f"{v} {n}" for v, _ in VERBS for n, _ in NOUNS] + [f"cannot {v} %s" for v, _ in VERBS]
FR = [f"{v} {n}" for _, v in VERBS for _, n in NOUNS] + [f"impossible de {v} %s" for _, v in VERBS]

SMALL = {
    "d_model": 32,
    "n_heads": 2,
    "d_ff": 64,
    "n_layers": 1,
    "dropout": 0.0,
    "vocab_size": 400,
    "learning_rate": 3e-3,
    "warmup_steps": 10,
    "max_epochs": 100,
    "validation_fraction": 0.0,
    "beam_size": 1,
    "random_state": 0,
}


@pytest.fixture(scope="module")
def fitted():
    return DuoTranslator(**SMALL).fit(EN * 3, FR * 3)


def test_learns_a_small_corpus(fitted):
    out = fitted.predict(EN)
    assert out.dtype == object and out.shape == (len(EN),)
    assert np.mean(out == np.array(FR, dtype=object)) >= 0.8
    assert fitted.score(EN, FR) > 70
    assert fitted.history_[-1]["train_loss"] < fitted.history_[0]["train_loss"]


def test_placeholders_carried_unchanged(fitted):
    # Never seen in training: the placeholder token carries whatever the source held.
    out = fitted.predict(["cannot open {path}", "cannot save %(name)s"])
    assert out.tolist() == ["impossible de ouvrir {path}", "impossible de enregistrer %(name)s"]


def test_placeholder_protection_round_trip():
    masked, slots = protect_placeholders("copy %s to %(dest)s: %d%% {0} %1$s %s")
    assert slots == ["%s", "%(dest)s", "%d", "%%", "{0}", "%1$s"]
    assert "%" not in masked and "{" not in masked
    target, _ = protect_placeholders("copier %s vers %(dest)s %z", slots)
    assert restore_placeholders(target, slots) == "copier %s vers %(dest)s %z"
    assert restore_placeholders(masked, slots[:1]).startswith("copy %s to")


def test_translations_do_not_depend_on_the_batch(fitted):
    queries = EN[:5] + ["cannot delete the window", "open"]
    for beam in (1, 3):
        model = clone(fitted).set_params(beam_size=beam)
        model.__dict__.update({k: v for k, v in fitted.__dict__.items() if k.endswith("_")})
        together = model.predict(queries).tolist()
        assert together == [model.predict([q])[0] for q in queries]
        assert together == model.predict(queries[::-1]).tolist()[::-1]


class _Scripted(torch.nn.Module):
    """Next-token probabilities fixed by the prefix (ids: 3 EOS, 4 "A", 5 "B").

    After BOS: A 0.55, B 0.45. After A: A 0.37, B 0.35, EOS 0.28. After anything else: EOS 0.99.
    Greedy takes A and ends with probability 0.55 x 0.37 x 0.99 = 0.20; the best translation is
    "B" with 0.45 x 0.99 = 0.45.
    """

    def encode(self, src):
        return (torch.zeros(src.shape[0], 1, 1),), torch.ones(src.shape[0], 1, dtype=torch.bool)

    def decode(self, tokens, memory, memory_mask, last_only=False):
        probs = torch.full((tokens.shape[0], 6), 1e-4)
        for row, prefix in enumerate(tokens.tolist()):
            if prefix == [BOS_ID]:
                probs[row, 4], probs[row, 5] = 0.55, 0.45
            elif prefix == [BOS_ID, 4]:
                probs[row, 3], probs[row, 4], probs[row, 5] = 0.28, 0.37, 0.35
            else:
                probs[row, EOS_ID] = 0.99
        return probs.log().unsqueeze(1).expand(-1, 1 if last_only else tokens.shape[1], -1)


def test_beam_search_beats_greedy_where_greedy_is_short_sighted():
    src = torch.ones(2, 3, dtype=torch.int64)
    greedy = greedy_search(_Scripted(), src, 5)
    assert greedy[0][0] == 4 and greedy == [greedy[0]] * 2
    assert beam_search(_Scripted(), src, 5, beam_size=2, alpha=0.0) == [[5], [5]]
    # Beam 1 is greedy.
    assert beam_search(_Scripted(), src, 5, beam_size=1, alpha=0.0) == greedy


def test_max_length(fitted):
    model = clone(fitted).set_params(max_length=2)
    model.__dict__.update({k: v for k, v in fitted.__dict__.items() if k.endswith("_")})
    for text in model.predict(EN[:4]):
        assert len(model.target_subwords_.encode([text])[0]) <= 2


def test_deterministic_and_clone(fitted):
    again = DuoTranslator(**SMALL).fit(EN * 3, FR * 3)
    assert again.predict(EN).tolist() == fitted.predict(EN).tolist()
    assert clone(fitted).get_params() == fitted.get_params()
    assert not hasattr(clone(fitted), "module_")


def test_joblib_and_state_round_trips(fitted):
    buffer = io.BytesIO()
    joblib.dump(fitted, buffer)
    buffer.seek(0)
    expected = fitted.predict(EN).tolist()
    assert joblib.load(buffer).predict(EN).tolist() == expected
    state = fitted._export_state()
    allowed = (dict, list, tuple, str, int, float, bool, type(None), np.ndarray, torch.Tensor)

    def plain(value):
        if isinstance(value, dict):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return all(plain(v) for v in value)
        return isinstance(value, allowed)

    assert plain(state)
    copy = DuoTranslator(**SMALL)
    copy._import_state(state)
    assert copy.predict(EN).tolist() == expected


def test_validation_history_and_budget():
    model = DuoTranslator(**{**SMALL, "validation_fraction": 0.25, "max_epochs": 4}).fit(EN, FR)
    losses = [r["valid_loss"] for r in model.history_]
    assert model.best_epoch_ == 1 + int(np.argmin(losses))
    assert all(
        r["valid_perplexity"] == pytest.approx(np.exp(r["valid_loss"])) for r in model.history_
    )
    seen = []
    quick = DuoTranslator(
        **{**SMALL, "max_time": 1e-6, "epoch_callback": lambda m, r: seen.append(r)}
    )
    quick.fit(EN, FR)
    assert len(quick.history_) == 1 and quick.history_[0]["steps"] == 1 and len(seen) == 1


@pytest.mark.parametrize(
    "X, y, error, match",
    [
        (EN, FR[:-1], ValueError, "same length"),
        (EN[:2], ["ouvrir", None], TypeError, r"y\[1\]"),
        (EN[:2], ["ouvrir", 3], TypeError, r"y\[1\]"),
        ([], [], ValueError, "empty"),
        ("open the file", "ouvrir", TypeError, "list of strings"),
        ([b"open"], ["ouvrir"], TypeError, r"X\[0\]"),
    ],
)
def test_bad_input_fails_before_training(X, y, error, match):
    with pytest.raises(error, match=match):
        DuoTranslator(**SMALL).fit(X, y)


def test_bad_parameter():
    with pytest.raises(ValueError, match="beam_size"):
        DuoTranslator(beam_size=0).fit(EN, FR)
    with pytest.raises(ValueError, match="divide"):
        DuoTranslator(**{**SMALL, "n_heads": 3}).fit(EN, FR)


def test_pipeline_with_meta_embeddings_and_grid_search():
    emb = MetaEmbeddingTransformer(
        [
            ("cbow", Word2VecVectorizer(vector_size=8, sg=0, min_count=1, random_state=0)),
            ("sg", Word2VecVectorizer(vector_size=12, sg=1, min_count=1, random_state=0)),
        ],
        min_count=1,
    )
    mt = Pipeline([("emb", emb), ("mt", DuoTranslator(**SMALL))])
    mt.fit(EN * 3, FR * 3)
    assert [e.weight.shape[1] for e in mt[-1].module_.src_embeddings] == [8, 12]
    assert mt.score(EN, FR) > 25
    with pytest.raises(TypeError, match="TokenSequences"):
        mt[-1].predict(["open the file"])
    search = GridSearchCV(clone(mt).set_params(mt__max_epochs=3), {"mt__n_layers": [0, 1]}, cv=2)
    search.fit(EN * 2, FR * 2)
    assert search.best_params_["mt__n_layers"] in (0, 1)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_save_weights_round_trip(fitted, tmp_path):
    from sklearn_lama import load_weights, save_weights

    save_weights(fitted.set_params(epoch_callback=print), tmp_path / "mt.pt")
    fitted.set_params(epoch_callback=None)
    loaded = load_weights(tmp_path / "mt.pt")
    assert loaded.epoch_callback is None  # code is not stored
    assert loaded.predict(EN).tolist() == fitted.predict(EN).tolist()


def test_missing_optional_dependency_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    with pytest.raises(ImportError, match=r"sklearn-lama\[translation\]"):
        DuoTranslator(**SMALL).fit(EN * 3, FR * 3)
