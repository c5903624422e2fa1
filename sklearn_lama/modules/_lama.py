"""LAMA: low-rank factorised multi-head attention.

Equation numbers refer to S. Mehta, H. Rangwala and N. Ramakrishnan, "Compact Multi-Head
Self-Attention for Learning Supervised Text Representations" (§3).
"""

import warnings

import torch
from torch import nn

from ._masking import masked_mean, masked_softmax

__all__ = ["BiGRUEncoder", "LAMAAttention", "LAMAModule"]

_L2_EPS = 1e-6
# The parameters of a one-layer nn.GRU, in the order torch.gru takes them.
_GRU_WEIGHTS = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
# The start of the warning cuDNN gives for weights it must copy into its own buffer.
_CUDNN_COPY_WARNING = "RNN module weights are not part of single contiguous chunk"


class BiGRUEncoder(nn.Module):
    """Bidirectional GRU over padded batches (Eq. 1-6).

    Padding sits at the end of each row, so the forward GRU never reads it
    before a real token. The backward GRU runs forward over each document
    reversed within its own length (padding stays at the end), and its output
    is flipped back. A document's annotations are therefore the same alone or
    inside a batch of longer ones. (Packed sequences would give the same, with
    an allocation at every time step of their backward pass.)

    Long documents: a recurrence runs one step per token, and each step works
    on the rows of the batch at once; one very long document leaves a step a
    single row where shorter documents under the same token budget give it
    many, so its cost per token is far higher (the "Scaling out" page has the
    figures). With ``chunk_length`` set, each
    direction reads a document beyond its first ``chunk_length`` tokens in
    chunks of that many tokens, all chunks of the batch at once, each chunk's
    state warmed up from zero over the ``chunk_length // 4`` tokens before it
    instead of carried over the whole prefix. This deviates from Eq. 6 for
    documents longer than ``chunk_length`` only (shorter ones are computed
    exactly), and chunks sit at fixed positions, so a document's annotations
    still do not depend on its batch.

    The two directions run as one recurrence of width ``2h``: a GRU whose
    first ``h`` units are the forward GRU's and last ``h`` the backward GRU's,
    reading each word beside its mirror word. Its weights are the two
    modules' parameters laid block-diagonally within each gate (reset, update,
    new), so each half reads only its own direction's input and state: the
    states are the two GRUs', in half the operations per time step.
    ``forward_gru`` and ``backward_gru`` hold the parameters (and so the saved
    state dict); the recurrence is ``torch.gru``, the function ``nn.GRU`` runs,
    on the weights assembled from them. It is the one recurrence for training,
    prediction and export: torch's own kernels (cuDNN on CUDA) and a graph that
    ONNX export traces (``aten::gru``).

    Parameters
    ----------
    input_size : int
        Size of the word embeddings.
    hidden_size : int
        Hidden size ``h`` of each direction.
    chunk_length : int or None, default=None
        Tokens per chunk of a long document; ``None`` runs every document in
        one recurrence.
    """

    def __init__(self, input_size, hidden_size, chunk_length=None):
        super().__init__()
        self.forward_gru = nn.GRU(input_size, hidden_size, batch_first=True)
        self.backward_gru = nn.GRU(input_size, hidden_size, batch_first=True)
        self.output_size = 2 * hidden_size
        self.chunk_length = chunk_length

    @staticmethod
    def _reverse_index(mask):
        lengths = mask.sum(1, keepdim=True)
        steps = torch.arange(mask.shape[1], device=mask.device).unsqueeze(0)
        return torch.where(steps < lengths, lengths - 1 - steps, steps)

    def _weights(self):
        """The weights of the fused recurrence: ``[W_ih, W_hh, b_ih, b_hh]``.

        ``W_ih`` (6h, 2d), ``W_hh`` (6h, 2h), ``b_ih`` and ``b_hh`` (6h,): per
        gate, the forward GRU's rows then the backward GRU's, each on its own
        block of columns (Eq. 1-4 of either direction, side by side).
        """
        first, second = self.forward_gru, self.backward_gru

        def block_diagonal(a, b):
            top = torch.cat([a, a.new_zeros(a.shape[0], b.shape[1])], dim=1)
            return torch.cat([top, torch.cat([b.new_zeros(b.shape[0], a.shape[1]), b], dim=1)])

        def per_gate(a, b, join):
            return torch.cat(
                [join(a_gate, b_gate) for a_gate, b_gate in zip(a.chunk(3), b.chunk(3))]
            )

        return [
            per_gate(
                getattr(first, name),
                getattr(second, name),
                block_diagonal if name.startswith("weight") else lambda a, b: torch.cat([a, b]),
            )
            for name in _GRU_WEIGHTS
        ]

    def _gru(self, x):
        """The fused recurrence's states over ``x`` (B, T, 2d) from a zero state, in float32.

        CUDA's autocast runs cuDNN's recurrences in float16 whatever its dtype (under
        ``precision="bf16"`` too, where no loss scaling guards float16's range), while the
        CPU's leaves them in float32: kept in float32, a precision means the same model on
        every device. cuDNN warns of weights outside one contiguous buffer on every call
        (it copies them in): these are assembled anew at every call by design.
        """
        if x.device.type == "cuda":
            with torch.autocast("cuda", enabled=False), warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=_CUDNN_COPY_WARNING)
                return self._run(x.float())
        return self._run(x)

    def _run(self, x):
        state = x.new_zeros(1, x.shape[0], self.output_size)
        # One layer with biases, no dropout, batch first, one direction (of width 2h).
        return torch.gru(x, state, self._weights(), True, 1, 0.0, self.training, False, True)[0]

    def _recur(self, x):
        """The fused recurrence over ``x`` (B, T, 2d), chunked past ``chunk_length`` tokens."""
        batch, length, size = x.shape
        chunk = self.chunk_length
        if chunk is None or length == 0:
            return self._gru(x)
        # Arithmetic, not a branch on the length, so that a traced graph (ONNX
        # export) holds for every length: ``long`` is 1 past ``chunk`` tokens,
        # else 0, and a shorter document is one chunk of its own length without
        # warm-up, which is the plain recurrence.
        long = 1 - 1 // ((length - 1) // chunk + 1)
        width = chunk * long + length * (1 - long)
        warm = (chunk // 4) * long
        # Non-negative operands: ONNX divides integers towards zero, not down.
        n_chunks = (length + width - 1) // width
        starts = torch.arange(n_chunks, device=x.device) * width
        window_starts = (starts - warm).clamp_min(0)
        # Chunk k reads tokens from k*chunk - warm (0 for the first chunk) and
        # keeps its outputs from k*chunk on; positions past the end only ever
        # follow the outputs kept, and are cut off below.
        steps = window_starts[:, None] + torch.arange(width + warm, device=x.device)
        windows = x[:, steps.clamp_max(length - 1)]
        states = self._gru(windows.reshape(batch * n_chunks, width + warm, size))
        states = states.reshape(batch, n_chunks * (width + warm), -1)
        # The outputs kept, as positions in the chunks laid end to end: one
        # index per position for all rows (an index per element, as gather
        # takes, is as large as the states in an ONNX graph).
        offsets = starts - window_starts + torch.arange(n_chunks, device=x.device) * (width + warm)
        keep = (offsets[:, None] + torch.arange(width, device=x.device)).reshape(-1)
        return states.index_select(1, keep).narrow(1, 0, length)

    def forward(self, x, mask):
        # Each row reversed within its length, as positions in the flattened
        # batch; the reversal is its own inverse.
        batch, length, _ = x.shape
        rows = torch.arange(batch, device=x.device).unsqueeze(1) * length
        index = (self._reverse_index(mask) + rows).reshape(-1)
        reversed_x = x.reshape(batch * length, -1).index_select(0, index).view(batch, length, -1)
        # Eq. 6a: forward states in the first half, backward ones (reversed) in the second.
        states = self._recur(torch.cat([x, reversed_x], dim=-1))
        forward_states, backward_states = states.split(self.output_size // 2, dim=-1)
        backward_states = backward_states.reshape(batch * length, -1).index_select(0, index)
        return torch.cat([forward_states, backward_states.view(batch, length, -1)], dim=-1)


class LAMAAttention(nn.Module):
    """Multi-head attention from a low-rank bilinear form with a context vector.

    Computes ``A = softmax(l2(tanh(P̃ᵀ C_g ∘ Q̃ᵀ Hᵀ)))`` (Eq. 13) with
    ``u_t = tanh(W_w h_t + b_w)`` (Eq. 7) in place of ``h_t``, as Eq. 10-11 do.

    The ``l2`` of Eq. 13 normalises each word's vector of ``m`` head scores
    (§3.3: "an l2 normalization layer across the m dimension"). With a single
    head (``m = 1``) that vector has one entry and ``x / |x| = sign(x)``: every
    word gets the score ±1, whose gradient is zero, so ``P``, ``Q``, ``W_w``
    and ``b_w`` would never train, although the paper trains and reports
    ``m = 1`` (Fig. 5). The normalisation is therefore applied only when
    ``m > 1``; at ``m = 1`` the score is ``tanh(f_t)``, already in (-1, 1)
    like the normalised scores, and the softmax over the words of Eq. 12
    follows unchanged. (Normalising over another axis instead, e.g. the words,
    would make the scores depend on the document's length, which Eq. 13's
    per-word normalisation does not.) The documentation's results page
    compares this with the l2 kept at ``m = 1``.

    ``W_w`` and ``b_w`` are drawn from the paper's "Gaussian priors with 0
    mean and 0.1 standard deviation" (§3.2) as their initialisation only: the
    loss has no matching log-prior (L2) term. The optimiser's weight decay is
    the closest regulariser, but it applies to every parameter with one
    strength rather than ``1 / (2 · 0.1²)`` to these two.

    Parameters
    ----------
    input_size : int
        Size of the word annotations ``h_t`` (``2h`` after a BiGRU).
    n_heads : int
        Number of heads ``m``.
    rank : int, default=1
        Rank ``k`` of each head's factorisation; Eq. 10 sums the ``k`` products.
    """

    def __init__(self, input_size, n_heads, rank=1):
        super().__init__()
        self.n_heads = n_heads
        self.rank = rank
        self.word_projection = nn.Linear(input_size, input_size)
        # The paper's Gaussian prior on W_w and b_w (§3.2), as initialisation
        # only: mean 0, std 0.1.
        nn.init.normal_(self.word_projection.weight, std=0.1)
        nn.init.normal_(self.word_projection.bias, std=0.1)
        self.P = nn.Linear(input_size, n_heads * rank, bias=False)
        self.Q = nn.Linear(input_size, n_heads * rank, bias=False)

    def forward(self, H, context, mask):
        """Return the attention matrix ``A`` of shape (B, m, T).

        Parameters
        ----------
        H : Tensor of shape (B, T, input_size)
            Word annotations.
        context : Tensor of shape (B, input_size)
            Global context vector ``c`` of each document.
        mask : BoolTensor of shape (B, T)
            True on real tokens.
        """
        batch, length, _ = H.shape
        u = torch.tanh(self.word_projection(H))  # Eq. 7
        # Eq. 10-11: P̃ᵀc ∘ Q̃ᵀu_t, the k products of each head summed.
        scores = self.P(context).unsqueeze(1) * self.Q(u)
        scores = scores.view(batch, length, self.n_heads, self.rank).sum(-1)
        scores = torch.tanh(scores)
        if self.n_heads > 1:
            # l2 normalisation across the m heads at each time step (Eq. 13); with
            # one head it would leave only the score's sign, with zero gradient
            # (see the class docstring).
            scores = scores / scores.norm(dim=-1, keepdim=True).clamp_min(_L2_EPS)
        return masked_softmax(scores, mask.unsqueeze(-1), dim=1).transpose(1, 2)


class LAMAModule(nn.Module):
    """The LAMA classifier: encoder, LAMA attention, matrix embedding, MLP.

    Parameters
    ----------
    input_size : int
        Size of the word embeddings.
    n_classes : int
        Number of output classes.
    n_heads : int, default=15
        Attention heads ``m``.
    rank : int, default=1
        Factorisation rank ``k``.
    hidden_size : int, default=50
        BiGRU hidden size ``h``; the annotations have ``2h`` features.
    encoder : {"bigru", "none"}, default="bigru"
        ``"none"`` is the LAMA Encoder of §5.2: attention straight over the
        word embeddings.
    context : {"mean", "learned"}, default="mean"
        ``"mean"`` (LAMA+ctx): ``c`` is the masked mean of the document's word
        embeddings, linearly projected when its size differs from the
        annotations'. ``"learned"`` (LAMA): one learned vector for all documents.
    regularization : {None, "positions", "embeddings"}, default=None
        Disagreement penalty: Eq. 19a as ``‖AAᵀ − I‖²_F`` or Eq. 19b as the mean
        pairwise cosine of the head embeddings ``s_i``; averaged over the batch.
    reg_lambda : float, default=0.2
        Weight ``λ`` of the penalty (Eq. 18).
    mlp_hidden : int, default=512
        Hidden units of the classifier MLP. Eq. 16 writes the output as one
        affine map ``softmax(W_c d + b_c)``, while §3.5 gives the classifier a
        hidden layer ("MLP hidden state to 512", dropout 0.4 on it) without
        naming its activation; we use ``Linear -> ReLU -> Dropout -> Linear``
        (the ReLU is our choice: without any nonlinearity the two layers
        would collapse into the single affine map of Eq. 16; the results page
        compares the MLP with and without it).
    dropout : float, default=0.4
        Dropout on the MLP's hidden layer.
    """

    def __init__(
        self,
        input_size,
        n_classes,
        n_heads=15,
        rank=1,
        hidden_size=50,
        encoder="bigru",
        context="mean",
        regularization=None,
        reg_lambda=0.2,
        mlp_hidden=512,
        dropout=0.4,
    ):
        super().__init__()
        if encoder == "bigru":
            self.encoder = BiGRUEncoder(input_size, hidden_size)
            annotation_size = self.encoder.output_size
        else:
            self.encoder = None
            annotation_size = input_size
        if context == "learned":
            self.context = nn.Parameter(torch.randn(annotation_size) * 0.1)
            self.context_projection = None
        else:
            self.context = None
            self.context_projection = (
                nn.Linear(input_size, annotation_size) if input_size != annotation_size else None
            )
        self.attention = LAMAAttention(annotation_size, n_heads, rank)
        self.regularization = regularization
        self.reg_lambda = reg_lambda
        self.classifier = nn.Sequential(
            nn.Linear(n_heads * annotation_size, mlp_hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(mlp_hidden, n_classes),
        )

    def _context(self, x, mask):
        if self.context is not None:
            return self.context.expand(x.shape[0], -1)
        c = masked_mean(x, mask)
        return c if self.context_projection is None else self.context_projection(c)

    def attend(self, x, mask):
        """Return the annotations ``H`` (B, T, D) and attention ``A`` (B, m, T)."""
        H = x if self.encoder is None else self.encoder(x, mask)
        return H, self.attention(H, self._context(x, mask), mask)

    def token_attention(self, x, mask):
        """Attention of every head over the document's tokens, ``A`` of Eq. 13.

        Parameters
        ----------
        x : Tensor of shape (B, T, d)
            Word embeddings, as :meth:`SequenceNetwork.embed` returns them.
        mask : BoolTensor of shape (B, T)
            True on real tokens.

        Returns
        -------
        Tensor of shape (B, m, T)
            One row per head (``m = n_heads``), summing to 1 over the real
            tokens and exactly 0 on padding (all zeros for an empty document).
        """
        return self.attend(x, mask)[1]

    def forward(self, x, mask):
        """Return ``(logits, penalty)`` for embeddings ``x`` (B, T, d) and ``mask``."""
        H, A = self.attend(x, mask)
        S = A @ H  # Eq. 15, one row per head
        logits = self.classifier(S.flatten(1))  # Eq. 16 (softmax in the loss)
        return logits, self.penalty(A, S)

    def penalty(self, A, S):
        """``λ``-weighted disagreement penalty (the ``−λD`` term of Eq. 18)."""
        if self.regularization is None:
            return A.new_zeros(())
        if self.regularization == "positions":  # Eq. 19a
            eye = torch.eye(A.shape[1], dtype=A.dtype, device=A.device)
            value = ((A @ A.transpose(1, 2) - eye) ** 2).sum((1, 2))
        else:  # Eq. 19b
            unit = S / S.norm(dim=-1, keepdim=True).clamp_min(_L2_EPS)
            value = (unit @ unit.transpose(1, 2)).mean((1, 2))
        return self.reg_lambda * value.mean()
