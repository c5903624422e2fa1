"""LAMA: low-rank factorised multi-head attention.

Equation numbers refer to S. Mehta, H. Rangwala and N. Ramakrishnan, "Compact Multi-Head
Self-Attention for Learning Supervised Text Representations" (§3).
"""

import torch
from torch import nn

from ._masking import masked_mean, masked_softmax

__all__ = ["BiGRUEncoder", "LAMAAttention", "LAMAModule"]

_L2_EPS = 1e-6


class _LockstepGRU(torch.autograd.Function):
    """GRU recurrences of several directions stepped together, with a written-out backward.

    ``gates_in`` (D, T, B, 3H) are the input projections ``W_ih x_t + b_ih``
    of ``D`` directions, ``w_hh`` (D, 3H, H) and ``b_hh`` (D, 3H) their
    recurrent weights, gates ordered as ``nn.GRU``'s (reset, update, new);
    every state starts from zero. Returns the states (D, T, B, H). A step is
    ``nn.GRU``'s cell: ``r, z = σ(i_rz + h W_rz + b_rz)``, ``n = tanh(i_n +
    r ∘ (h W_n + b_n))``, ``h' = (h - n) ∘ z + n``. The directions share
    every operation of a step (one batched product for all), and the
    backward pass runs those of the gradient only, where autograd would
    replay each operation of each direction's steps.
    """

    @staticmethod
    def forward(ctx, gates_in, w_hh, b_hh):
        directions, length, batch, width = gates_in.shape
        hidden = width // 3
        w_t = w_hh.transpose(1, 2)
        bias = b_hh.unsqueeze(1)
        states = gates_in.new_empty(directions, length, batch, hidden)
        gates_hh = gates_in.new_empty(length, directions, batch, width)
        rz = gates_in.new_empty(length, directions, batch, 2 * hidden)
        new = gates_in.new_empty(length, directions, batch, hidden)
        h = gates_in.new_zeros(directions, batch, hidden)
        for t in range(length):
            torch.baddbmm(bias, h, w_t, out=gates_hh[t])
            torch.add(gates_in[:, t, :, : 2 * hidden], gates_hh[t, ..., : 2 * hidden], out=rz[t])
            rz[t].sigmoid_()
            torch.mul(gates_hh[t, ..., 2 * hidden :], rz[t, ..., :hidden], out=new[t])
            new[t].add_(gates_in[:, t, :, 2 * hidden :]).tanh_()
            h = torch.sub(h, new[t], out=states[:, t]).mul_(rz[t, ..., hidden:]).add_(new[t])
        ctx.save_for_backward(w_hh, states, gates_hh, rz, new)
        return states

    @staticmethod
    def backward(ctx, grad_states):
        w_hh, states, gates_hh, rz, new = ctx.saved_tensors
        directions, length, batch, hidden = states.shape
        previous = torch.cat([states.new_zeros(directions, 1, batch, hidden), states[:, :-1]], 1)
        d_update = previous.transpose(0, 1) - new
        # The gates' input gradients; the recurrent ones equal them but for the new
        # gate's, which the reset gate scales.
        grad_in = states.new_empty(directions, length, batch, 3 * hidden)
        grad_hh_new = states.new_empty(directions, length, batch, hidden)
        a_rz = states.new_empty(directions, batch, 2 * hidden)
        grad_h = states.new_zeros(directions, batch, hidden)
        w_rz, w_new = w_hh[:, : 2 * hidden], w_hh[:, 2 * hidden :]
        for t in range(length - 1, -1, -1):
            grad_h = grad_h + grad_states[:, t]
            through = grad_h * rz[t, ..., hidden:]
            a_new = grad_in[:, t, :, 2 * hidden :]
            torch.ops.aten.tanh_backward.grad_input(grad_h - through, new[t], grad_input=a_new)
            torch.mul(a_new, rz[t, ..., :hidden], out=grad_hh_new[:, t])
            torch.mul(a_new, gates_hh[t, ..., 2 * hidden :], out=a_rz[..., :hidden])
            torch.mul(grad_h, d_update[t], out=a_rz[..., hidden:])
            a_rz_pre = grad_in[:, t, :, : 2 * hidden]
            torch.ops.aten.sigmoid_backward.grad_input(a_rz, rz[t], grad_input=a_rz_pre)
            grad_h = torch.baddbmm(through, a_rz_pre, w_rz).baddbmm_(grad_hh_new[:, t], w_new)
        flat_previous = previous.view(directions, -1, hidden)
        flat_rz = grad_in[..., : 2 * hidden].reshape(directions, -1, 2 * hidden)
        flat_new = grad_hh_new.view(directions, -1, hidden)
        grad_w = torch.cat(
            [flat_rz.transpose(1, 2) @ flat_previous, flat_new.transpose(1, 2) @ flat_previous], 1
        )
        grad_b = torch.cat([flat_rz.sum(1), flat_new.sum(1)], 1)
        return grad_in, grad_w, grad_b


class BiGRUEncoder(nn.Module):
    """Bidirectional GRU over padded batches (Eq. 1-6).

    Padding sits at the end of each row, so the forward GRU never reads it
    before a real token. The backward GRU runs forward over each document
    reversed within its own length (padding stays at the end), and its output
    is flipped back. A document's annotations are therefore the same alone or
    inside a batch of longer ones. (Packed sequences would give the same, with
    an allocation at every time step of their backward pass.)

    Long documents: a recurrence runs one step per token, and a batch of one
    20,000-token document gives each step one row to work on, where a batch
    of 2,000-token documents gives 16 (the token budget is the same), so its
    cost per token is many times higher (the "Scaling out" page measures
    it). With ``chunk_length`` set, each
    direction reads a document beyond its first ``chunk_length`` tokens in
    chunks of that many tokens, all chunks of the batch at once, each chunk's
    state warmed up from zero over the ``chunk_length // 4`` tokens before it
    instead of carried over the whole prefix. This deviates from Eq. 6 for
    documents longer than ``chunk_length`` only (shorter ones are computed
    exactly), and chunks sit at fixed positions, so a document's annotations
    still do not depend on its batch.

    While training on the CPU (float32, gradients on, no autocast, no document
    beyond ``chunk_length``), both directions step together in one recurrence
    with a written-out backward pass (``_LockstepGRU``): the same function as
    the two ``nn.GRU`` modules, equal to their outputs and gradients up to
    float rounding, in fewer operations per step. Everywhere else
    (prediction, export, CUDA's cuDNN, chunked documents) the ``nn.GRU``
    modules run; they hold the weights in both cases.

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

    @staticmethod
    def _gru(gru, x):
        """The outputs of ``gru`` over ``x``, computed in float32 whatever the precision.

        CUDA's autocast runs cuDNN's recurrences in float16 whatever its dtype (under
        ``precision="bf16"`` too, where no loss scaling guards float16's range), while the
        CPU's leaves them in float32: kept in float32, a precision means the same model on
        every device.
        """
        if x.device.type == "cuda":
            with torch.autocast("cuda", enabled=False):
                return gru(x.float())[0]
        return gru(x)[0]

    def _recur(self, gru, x):
        """``gru`` over ``x`` (B, T, d) from a zero state, chunked past ``chunk_length`` tokens."""
        batch, length, size = x.shape
        chunk = self.chunk_length
        if chunk is None or length == 0:
            return self._gru(gru, x)
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
        states = self._gru(gru, windows.reshape(batch * n_chunks, width + warm, size))
        states = states.reshape(batch, n_chunks * (width + warm), -1)
        # The outputs kept, as positions in the chunks laid end to end: one
        # index per position for all rows (an index per element, as gather
        # takes, is as large as the states in an ONNX graph).
        offsets = starts - window_starts + torch.arange(n_chunks, device=x.device) * (width + warm)
        keep = (offsets[:, None] + torch.arange(width, device=x.device)).reshape(-1)
        return states.index_select(1, keep).narrow(1, 0, length)

    def _lockstep(self, x, reversed_x):
        """Both directions' states over ``x`` and ``reversed_x`` (B, T, d), stepped together."""
        grus = (self.forward_gru, self.backward_gru)
        w_ih = torch.stack([gru.weight_ih_l0 for gru in grus])
        b_ih = torch.stack([gru.bias_ih_l0 for gru in grus])
        w_hh = torch.stack([gru.weight_hh_l0 for gru in grus])
        b_hh = torch.stack([gru.bias_hh_l0 for gru in grus])
        # Time-major input projections of all steps, one product per direction.
        inputs = torch.stack([x, reversed_x]).transpose(1, 2)
        gates_in = torch.baddbmm(b_ih.unsqueeze(1), inputs.flatten(1, 2), w_ih.transpose(1, 2))
        states = _LockstepGRU.apply(gates_in.unflatten(1, inputs.shape[1:3]), w_hh, b_hh)
        return states[0].transpose(0, 1), states[1].transpose(0, 1)

    def _steps_together(self, x):
        """Whether this batch's recurrences run by :meth:`_lockstep` (training on the CPU)."""
        return (
            self.training
            and torch.is_grad_enabled()
            and x.device.type == "cpu"
            and x.dtype == torch.float32
            and not torch.is_autocast_enabled("cpu")
            and not torch.jit.is_tracing()
            and (self.chunk_length is None or x.shape[1] <= self.chunk_length)
        )

    def forward(self, x, mask):
        # Each row reversed within its length, as positions in the flattened
        # batch; the reversal is its own inverse.
        batch, length, _ = x.shape
        rows = torch.arange(batch, device=x.device).unsqueeze(1) * length
        index = (self._reverse_index(mask) + rows).reshape(-1)
        reversed_x = x.reshape(batch * length, -1).index_select(0, index)
        reversed_x = reversed_x.view(batch, length, -1)
        if self._steps_together(x):
            forward_states, backward_states = self._lockstep(x, reversed_x)
        else:
            forward_states = self._recur(self.forward_gru, x)  # Eq. 6a
            backward_states = self._recur(self.backward_gru, reversed_x)
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
