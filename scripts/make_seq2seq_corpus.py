"""Write assets/seq2seq/corpus.tsv: short Chinese→English and French→English sentence pairs, from a small grammar.

No PyPI package ships a small public zh–en / fr–en parallel corpus that works offline (tatoebatools downloads from
tatoeba.org at run time), so the pairs are generated here: a meaning is one to three clauses, each a subject, a verb
and its object (or "be" and a profession), with optional negation or "also", a time and a place; each meaning is
written in Chinese, French and English by the rules below (French conjugation, elision j'/n'/l'/d', the partitive
turning into de after a negation; English 3rd-person -s, do/does not, a/an). Both translations of a meaning land on
the same side of the split, so no held-out English sentence was ever a training target.

    python scripts/make_seq2seq_corpus.py          # deterministic (seed 0)

Columns: split (train/heldout), lang (zh/fr), source, English target.
"""
from __future__ import annotations

import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "assets" / "seq2seq" / "corpus.tsv"
SEED_PAIRS = [("zh", "我爱中国", "I love China"), ("zh", "机器学习", "machine learning"),
              ("fr", "je suis étudiant", "I am a student")]

# zh, en, fr, French person (0 je … 5 ils), English 3rd-person singular, feminine
SUBJECTS = [("我", "I", "je", 0, False, False), ("你", "you", "tu", 1, False, False),
            ("他", "he", "il", 2, True, False), ("她", "she", "elle", 2, True, True),
            ("我们", "we", "nous", 3, False, False), ("他们", "they", "ils", 5, False, False)]
# zh, English base, English -s form, French forms by person
VERBS = {
    "love": ("爱", "love", "loves", "aime aimes aime aimons aimez aiment"),
    "watch": ("看", "watch", "watches", "regarde regardes regarde regardons regardez regardent"),
    "study": ("学习", "study", "studies", "étudie étudies étudie étudions étudiez étudient"),
    "eat": ("吃", "eat", "eats", "mange manges mange mangeons mangez mangent"),
    "speak": ("说", "speak", "speaks", "parle parles parle parlons parlez parlent"),
    "read": ("读", "read", "reads", "lis lis lit lisons lisez lisent"),
}
N = {  # nouns: zh, en, fr (with its article)
    "china": ("中国", "China", "la Chine"), "france": ("法国", "France", "la France"),
    "music": ("音乐", "music", "la musique"), "maths": ("数学", "mathematics", "les mathématiques"),
    "cats": ("猫", "cats", "les chats"), "dogs": ("狗", "dogs", "les chiens"),
    "ml": ("机器学习", "machine learning", "l'apprentissage automatique"),
    "beijing": ("北京", "Beijing", "Pékin"), "paris": ("巴黎", "Paris", "Paris"),
    "films": ("电影", "films", "les films"), "tv": ("电视", "television", "la télévision"),
    "news": ("新闻", "the news", "les informations"), "history": ("历史", "history", "l'histoire"),
    "physics": ("物理", "physics", "la physique"), "zh": ("中文", "Chinese", "le chinois"),
    "fr": ("法语", "French", "le français"), "en": ("英语", "English", "l'anglais"),
    "apples": ("苹果", "apples", "des pommes"), "bread": ("面包", "bread", "du pain"),
    "rice": ("米饭", "rice", "du riz"), "fish": ("鱼", "fish", "du poisson"),
    "books": ("书", "books", "des livres"), "papers": ("报纸", "newspapers", "des journaux"),
    "novels": ("小说", "novels", "des romans"),
}
SPOKEN = {"zh": ("中文", "Chinese", "chinois"), "fr": ("法语", "French", "français"), "en": ("英语", "English", "anglais")}
OBJECTS = {
    "love": ["china", "france", "music", "maths", "cats", "dogs", "ml", "beijing", "paris"],
    "watch": ["films", "tv", "cats", "dogs", "news"],
    "study": ["maths", "music", "ml", "history", "zh", "fr", "en", "physics"],
    "eat": ["apples", "bread", "rice", "fish"],
    "speak": ["zh", "fr", "en"],
    "read": ["books", "papers", "novels", "news"],
}
# zh, en singular, en plural, fr masculine, fr feminine, fr plural
PROFESSIONS = [("学生", "student", "students", "étudiant", "étudiante", "étudiants"),
               ("老师", "teacher", "teachers", "professeur", "professeure", "professeurs"),
               ("医生", "doctor", "doctors", "médecin", "médecin", "médecins"),
               ("工程师", "engineer", "engineers", "ingénieur", "ingénieure", "ingénieurs"),
               ("作家", "writer", "writers", "écrivain", "écrivaine", "écrivains")]
TIMES = [None, ("今天", "today", "aujourd'hui"), ("每天", "every day", "tous les jours")]
PLACES = [None, ("在北京", "in Beijing", "à Pékin"), ("在巴黎", "in Paris", "à Paris"),
          ("在学校", "at school", "à l'école")]
MODES = ["plain", "not", "also"]
VOWELS = tuple("aeiouhéèêàâîôû")


def elide(words: list[str]) -> str:
    """French elision: je/ne/le/la/de before a vowel become j'/n'/l'/d' (la France stays: F is a consonant)."""
    out: list[str] = []
    for word in words:
        if out and out[-1] in ("je", "ne", "de", "le", "la") and word.startswith(VOWELS):
            out[-1] = out[-1][0] + "'"
        out.append(word)
    return " ".join(out).replace("' ", "'")


def clause(subject, action, mode, time, place) -> tuple[str, str, str]:
    """One clause in (Chinese, English, French)."""
    s_zh, s_en, s_fr, person, third, feminine = subject
    zh_mode = {"plain": "", "not": "不", "also": "也"}[mode]
    zh_time, en_time, fr_time = time or ("", "", "")
    zh_place, en_place, fr_place = place or ("", "", "")
    if action[0] == "be":
        p_zh, sing, plural, masc, fem, fr_plural = action[1]
        be = {"I": "am", "he": "is", "she": "is"}.get(s_en, "are")
        noun = plural if person >= 3 else ("an " if sing[0] in "aeiou" else "a ") + sing
        en = [s_en, be] + {"plain": [], "not": ["not"], "also": ["also"]}[mode] + [noun]
        fr_noun = fr_plural if person >= 3 else (fem if feminine else masc)
        etre = "suis es est sommes êtes sont".split()[person]
        fr = [s_fr] + {"plain": [etre], "not": ["ne", etre, "pas"], "also": [etre, "aussi"]}[mode] + [fr_noun]
        return s_zh + zh_mode + "是" + p_zh, " ".join(en), elide(fr)
    verb, obj = action[1], action[2]
    v_zh, base, third_form, fr_forms = VERBS[verb]
    o_zh, o_en, o_fr = SPOKEN[obj] if verb == "speak" else N[obj]
    en_verb = third_form if third else base
    en = {"plain": [s_en, en_verb], "also": [s_en, "also", en_verb],
          "not": [s_en, "does" if third else "do", "not", base]}[mode] + [o_en, en_place, en_time]
    fr_verb = fr_forms.split()[person]
    if mode == "not" and o_fr.startswith(("du ", "des ")):
        o_fr = "de " + o_fr.split(" ", 1)[1]  # je mange du pain → je ne mange pas de pain
    fr = [s_fr] + {"plain": [fr_verb], "not": ["ne", fr_verb, "pas"], "also": [fr_verb, "aussi"]}[mode]
    fr += [o_fr, fr_place, fr_time]
    zh = s_zh + zh_time + zh_mode + zh_place + v_zh + o_zh
    return zh, " ".join(w for w in en if w), elide([w for w in " ".join(fr).split()])


def random_clause(rng: random.Random) -> tuple[str, str, str]:
    subject = rng.choice(SUBJECTS)
    mode = rng.choice(MODES) if rng.random() < 0.6 else "plain"
    if rng.random() < 0.2:
        return clause(subject, ("be", rng.choice(PROFESSIONS)), mode, None, None)
    verb = rng.choice(list(VERBS))
    time = rng.choice(TIMES) if rng.random() < 0.5 else None
    place = rng.choice(PLACES) if rng.random() < 0.5 else None
    return clause(subject, ("do", verb, rng.choice(OBJECTS[verb])), mode, time, place)


def meaning(rng: random.Random) -> tuple[str, str, str]:
    """One to three clauses joined by ，/ and / et."""
    n = rng.choices([1, 2, 3], weights=[5, 3, 2])[0]
    parts = [random_clause(rng) for _ in range(n)]
    return "，".join(p[0] for p in parts), " and ".join(p[1] for p in parts), " et ".join(p[2] for p in parts)


def build(train_meanings: int = 9000, heldout_meanings: int = 600, seed: int = 0) -> list[tuple[str, str, str, str]]:
    rng = random.Random(seed)
    seen: dict[str, tuple[str, str, str]] = {}
    for key in N:  # every noun phrase on its own: 机器学习 → machine learning
        zh, en, fr = N[key]
        seen[en] = (zh, en, fr.split(" ", 1)[1] if fr.startswith(("la ", "les ", "le ", "du ", "des ")) else fr)
    fixed = set(seen) | {"I love China", "I am a student"}
    seen["I love China"] = ("我爱中国", "I love China", "j'aime la Chine")
    seen["I am a student"] = ("我是学生", "I am a student", "je suis étudiant")
    while len(seen) < train_meanings + heldout_meanings:
        zh, en, fr = meaning(rng)
        seen.setdefault(en, (zh, en, fr))
    free = [en for en in seen if en not in fixed]
    rng.shuffle(free)
    heldout = set(free[:heldout_meanings])
    rows = []
    for en, (zh, _, fr) in seen.items():
        split = "heldout" if en in heldout else "train"
        rows += [(split, "zh", zh, en), (split, "fr", fr, en)]
    return rows


def main() -> None:
    rows = build()
    for lang, source, target in SEED_PAIRS:
        assert ("train", lang, source, target) in rows, (lang, source, target)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join("\t".join(row) + "\n" for row in rows), encoding="utf-8")
    print(f"{len(rows)} pairs -> {OUT}")


if __name__ == "__main__":
    main()
