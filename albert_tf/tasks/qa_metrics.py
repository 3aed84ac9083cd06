"""Which official metric scores a SQuAD-layout file: SQuAD's, CMRC 2018's or JSQuAD's, named or picked from the data.

- squad: SQuAD's EM and whitespace-token F1 (`squad_evaluation`). On Chinese or Japanese, written without
  spaces, a whole answer is one token and its F1 is its exact match, hence the two below.
- cmrc2018: CMRC 2018's EM and F1 over a mixed segmentation, each Chinese character a token
  (`cmrc2018_evaluation`).
- jsquad: JSQuAD's (JGLUE's) EM and character F1 (`jsquad_evaluation`).

`auto` picks from the contexts of the file to score: where the characters of the CJK scripts (Chinese
characters and kana) are most of its letters, jsquad when kana are at least KANA_SHARE of those (Japanese is
written with about half kana; Chinese has next to none: a few katakana names), else cmrc2018; otherwise squad.
Korean's Hangul counts as other letters: KorQuAD's metric is not one of these.
"""

import os

METRICS = ("squad", "cmrc2018", "jsquad")
CHOICES = ("auto", *METRICS)
# Above this share of the letters, the contexts are in Chinese or Japanese.
CJK_SHARE = 0.5
# From this share of the CJK characters on, the contexts are Japanese.
KANA_SHARE = 0.1
TITLES = {"squad": "SQuAD's", "cmrc2018": "CMRC 2018's", "jsquad": "JSQuAD's"}


def _is_han(char):
    code = ord(char)
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0xF900 <= code <= 0xFAFF
            or 0x20000 <= code <= 0x3134F or char in "々〆〇")


def _is_kana(char):
    code = ord(char)
    return 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF or 0xFF66 <= code <= 0xFF9F


def script_shares(articles):
    """(CJK share of the letters, kana share of the CJK characters) over the contexts of `articles`."""
    letters = han = kana = 0
    for article in articles:
        for paragraph in article["paragraphs"]:
            for char in paragraph["context"]:
                if _is_kana(char):
                    kana += 1
                elif _is_han(char):
                    han += 1
                elif not char.isalpha():
                    continue
                letters += 1
    cjk = han + kana
    return (cjk / letters if letters else 0.0), (kana / cjk if cjk else 0.0)


def pick_metric(articles, path):
    """(metric, the line that says why) for the contexts of `articles`, read from `path`."""
    cjk, kana = script_shares(articles)
    name = os.path.basename(path)
    if cjk > CJK_SHARE:
        metric = "jsquad" if kana >= KANA_SHARE else "cmrc2018"
        language = "Japanese" if metric == "jsquad" else "Chinese"
        why = (f"{cjk:.0%} of the letters of its contexts are Chinese characters or kana, {kana:.0%} of those "
               f"kana: {language}")
    else:
        metric = "squad"
        why = f"{cjk:.0%} of the letters of its contexts are Chinese characters or kana"
    return metric, f"Scoring {name} with {TITLES[metric]} official metric (--metric=auto: {why})."


def evaluate(metric, articles, predictions):
    """`metric`'s official figures of `predictions` ({id: text}) on `articles` (a SQuAD-layout `data` list),
    in percent, with "metric": its name. SQuAD's no-answer thresholds are `squad_evaluation.evaluate`'s."""
    if metric == "cmrc2018":
        from albert_tf.tasks import cmrc2018_evaluation as evaluation
    elif metric == "jsquad":
        from albert_tf.tasks import jsquad_evaluation as evaluation
    elif metric == "squad":
        from albert_tf.tasks import squad_evaluation as evaluation
    else:
        raise ValueError(f"metric must be one of {list(METRICS)}, got {metric!r}")
    return {**evaluation.evaluate(articles, predictions), "metric": metric}
