"""CMRC 2018's official metrics: EM and F1 over a mixed segmentation of Chinese and other text.

Written from the definitions of CMRC 2018's official evaluation script (cmrc2018_evaluate.py, "v5 - special",
for the SQuAD-style files), and checked against the figures that script gives (tests/test_cjk_qa.py):

- Text is lowercased and stripped of the whitespace around it. Punctuation is the script's own list of
  characters, `PUNCTUATION`. The list also names "……", two characters, which never equals the one character
  the script compares it with: an ellipsis stays, as in the script.
- Mixed segmentation: every character in U+4E00..U+9FA5 (the script's range for Chinese characters) is one
  token; a run of other characters is split into words as NLTK's word_tokenize splits it (the Penn Treebank
  conventions, `treebank_words`). For F1 the punctuation is dropped first, and a dropped mark does not end a
  run: "147.0（20）" is the one word "147.020", as in the script.
- F1: over the longest common substring of the two token sequences (contiguous tokens, not SQuAD's bag of
  tokens): precision = its length / the prediction's tokens, recall = its length / the gold answer's tokens;
  0 when they share no token (and so when either is empty).
- EM: 1 when the prediction equals a gold answer, both lowercased, stripped and without punctuation (the
  whitespace inside kept).
- Each takes the maximum over the question's gold answers: all of them, those with answer_start -1 too (the
  script reads only their texts).
- The averages are 100 * sum / questions; a question without a prediction scores 0 and counts in the
  questions (the script's SKIP counts them). The script reports AVERAGE = (EM + F1) / 2 beside them, each to
  three decimals.

One departure: NLTK's word_tokenize first splits a run into sentences with its punkt model, so a period that
ends a word inside a run ("j. r. r. tolkien") may be split off too; here a period is split off only at the
end of a run, as NLTK does within a sentence. On CMRC 2018's dev and trial answers this changes no figure
(compared with the official script in tests/test_cjk_qa.py).
"""

import re

# The official script's punctuation, one character each (its "……" entry can never match one character).
PUNCTUATION = frozenset("-:_*^/\\~`+=，。：？！“”；’《》·、「」（）－～『』")
# The official script's test for a Chinese character.
_CHINESE = re.compile("[\u4e00-\u9fa5]")

# NLTK 3.4.5's word_tokenize (the last NLTK that runs the official script, which is Python 2): the Penn
# Treebank rules, as (pattern, replacement) applied in order to the whole run, then a split at whitespace.
# The patterns NLTK compiles without re.UNICODE match ASCII digits, word characters and whitespace only under
# Python 2: re.ASCII keeps that; the ones NLTK added with re.UNICODE (curly quotes, guillemets) are Unicode.
_A = re.ASCII
_STARTING_QUOTES = [
    (re.compile("([«“‘„]|[`]+)"), r" \1 "),
    (re.compile(r'^"', _A), "``"),
    (re.compile(r"(``)", _A), r" \1 "),
    (re.compile(r"""([ \(\[{<])("|'{2})""", _A), r"\1 `` "),
    (re.compile(r"(?i)(')(?!re|ve|ll|m|t|s|d)(\w)\b"), r"\1 \2"),
]
_PUNCTUATION_RULES = [
    (re.compile("([^\\.])(\\.)([\\]\\)}>\"'»”’ ]*)\\s*$"), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])", _A), r" \1 \2"),
    (re.compile(r"([:,])$", _A), r" \1 "),
    (re.compile(r"\.\.\.", _A), r" ... "),
    (re.compile(r"[;@#$%&]", _A), r" \g<0> "),
    (re.compile(r"""([^\.])(\.)([\]\)}>"']*)\s*$""", _A), r"\1 \2\3 "),
    (re.compile(r"[?!]", _A), r" \g<0> "),
    (re.compile(r"([^'])' ", _A), r"\1 ' "),
    (re.compile(r"[\]\[\(\)\{\}\<\>]", _A), r" \g<0> "),
    (re.compile(r"--", _A), r" -- "),
]
_ENDING_QUOTES = [
    (re.compile("([»”’])"), r" \1 "),
    (re.compile(r'"', _A), " '' "),
    (re.compile(r"(\S)('')", _A), r"\1 \2 "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') ", _A), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", _A), r"\1 \2 "),
]
# Robert MacIntyre's contractions, split in two ("cannot" -> "can not").
_CONTRACTIONS = [re.compile(pattern, _A) for pattern in (
    r"(?i)\b(can)(not)\b", r"(?i)\b(d)('ye)\b", r"(?i)\b(gim)(me)\b", r"(?i)\b(gon)(na)\b", r"(?i)\b(got)(ta)\b",
    r"(?i)\b(lem)(me)\b", r"(?i)\b(mor)('n)\b", r"(?i)\b(wan)(na)\s", r"(?i) ('t)(is)\b", r"(?i) ('t)(was)\b")]


def treebank_words(text):
    """The words of a run of non-Chinese text, as NLTK's word_tokenize gives them within one sentence."""
    for pattern, replacement in _STARTING_QUOTES + _PUNCTUATION_RULES:
        text = pattern.sub(replacement, text)
    text = f" {text} "
    for pattern, replacement in _ENDING_QUOTES:
        text = pattern.sub(replacement, text)
    for pattern in _CONTRACTIONS:
        text = pattern.sub(r" \1 \2 ", text)
    return text.split()


def _normalized(text):
    return str(text).lower().strip()


def remove_punctuation(text):
    """Lowercased, stripped, without the script's punctuation (EM compares these)."""
    return "".join(char for char in _normalized(text) if char not in PUNCTUATION)


def mixed_segmentation(text, drop_punctuation=True):
    """Tokens of `text`: each Chinese character one, runs of other characters split into words.

    With drop_punctuation (what F1 uses) the script's punctuation is skipped, without ending a run; without
    it each mark is a token of its own.
    """
    tokens, run = [], ""
    for char in _normalized(text):
        if drop_punctuation and char in PUNCTUATION:
            continue
        if _CHINESE.match(char) or char in PUNCTUATION:
            if run:
                tokens.extend(treebank_words(run))
                run = ""
            tokens.append(char)
        else:
            run += char
    if run:
        tokens.extend(treebank_words(run))
    return tokens


def longest_common_substring(first, second):
    """Length of the longest run of tokens that `first` and `second` both contain."""
    best = 0
    previous = [0] * (len(second) + 1)
    for a in first:
        current = [0] * (len(second) + 1)
        for j, b in enumerate(second):
            if a == b:
                current[j + 1] = previous[j] + 1
                best = max(best, current[j + 1])
        previous = current
    return best


def f1(gold, prediction):
    gold_tokens, predicted_tokens = mixed_segmentation(gold), mixed_segmentation(prediction)
    shared = longest_common_substring(gold_tokens, predicted_tokens)
    if shared == 0:
        return 0.0
    precision = shared / len(predicted_tokens)
    recall = shared / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(gold, prediction):
    return int(remove_punctuation(gold) == remove_punctuation(prediction))


def gold_answers(articles):
    """{question id: [gold answer texts]}, every answer of the question (answer_start -1 too)."""
    return {qa["id"]: [answer["text"] for answer in qa["answers"]]
            for article in articles for paragraph in article["paragraphs"] for qa in paragraph["qas"]}


def evaluate(articles, predictions):
    """The official metrics, in percent: {exact, f1, average, total, skip}.

    articles: the `data` list of a CMRC 2018 (SQuAD-style) file; predictions: {id: text}. skip counts the
    questions without a prediction (each scored 0, as the script does). A question without gold answers
    (none in CMRC 2018) scores 0, where the script fails.
    """
    exact_sum = f1_sum = 0.0
    skip = 0
    golds = gold_answers(articles)
    for qas_id, answers in golds.items():
        if qas_id not in predictions:
            skip += 1
            continue
        prediction = predictions[qas_id]
        f1_sum += max((f1(gold, prediction) for gold in answers), default=0.0)
        exact_sum += max((exact_match(gold, prediction) for gold in answers), default=0)
    total = len(golds)
    exact = 100.0 * exact_sum / total if total else 0.0
    f1_score = 100.0 * f1_sum / total if total else 0.0
    return {"exact": exact, "f1": f1_score, "average": (exact + f1_score) / 2, "total": total, "skip": skip}
