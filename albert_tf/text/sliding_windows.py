"""Windows over a token sequence longer than the model's, and which window gives each token its best context.

BERT's sliding window, as SQuAD contexts and long tagged sentences use it: windows of at
most `max_tokens_per_window` tokens whose starts lie `doc_stride` tokens apart, the last
reaching the end; a token seen in several windows is read only from the one where it has
the most context on both sides.
"""


def doc_windows(num_tokens, max_tokens_per_window, doc_stride):
    """[(start, length)]: windows over num_tokens tokens, starts doc_stride apart, the last reaching the end."""
    windows = []
    start = 0
    while True:
        length = min(num_tokens - start, max_tokens_per_window)
        windows.append((start, length))
        if start + length >= num_tokens:
            return windows
        start += min(length, doc_stride)


def max_context_window(windows, token_index):
    """The index of the window that gives token `token_index` its best context (None if none holds it).

    A token's score in a window is min(tokens left of it, tokens right of it)
    + 0.01 * window length (BERT's rule); the first window with the top score wins.
    """
    best_score, best_index = None, None
    for index, (start, length) in enumerate(windows):
        end = start + length - 1
        if not start <= token_index <= end:
            continue
        score = min(token_index - start, end - token_index) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return best_index


def is_max_context(windows, window_index, token_index):
    """Whether window `window_index` gives token `token_index` its best context (`max_context_window`)."""
    return max_context_window(windows, token_index) == window_index
