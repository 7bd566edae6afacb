"""The rules of ``grader.integrity.injection``, and the triggers in front of them.

Each rule is a regular expression over a place's normalised, case-folded text. Run on
every place, the rules cost most of a grade, so each stands behind a *trigger*: words
and strings that every match of the rule holds ("ignore" and "instructions", "award"
and "marks", a "<" and a ">" around a role's name). ``triggered`` reads a place's
words once (``str.translate`` and ``split`` for ASCII text, no regex); they name the
clauses worth checking (each clause is filed under the words of its rarest need), which
are checked with set and substring tests, a pattern last; a rule runs only where one of
its clauses is met. The rules for words addressed to the grader in any form (role
claims, directives, self-assessment) are ``injection_address``'s. A trigger needs
nothing the normalisation could change but whitespace, so it may also be read on the
raw text when that is all normalising would change. It must never miss what its rule
finds: ``tests/test_injection_fast.py`` compares the scan with and without triggers on
every alternative of every rule.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .injection_address import ADDRESS_RULES
from .injection_terms import ALL_WHERE, SOURCE_WHERE, TEXT_WHERE, WHERE, Rule
from .injection_terms import Clause as _Clause
from .injection_terms import rx as _rx
from .injection_terms import top as _top
from .injection_terms import words as _w

__all__ = ["ALL_WHERE", "RULES", "SOURCE_WHERE", "TEXT_WHERE", "WHERE", "Rule", "triggered"]


_Q = r"(?:previous|prior|earlier|above|preceding|foregoing|former|original|initial|your|system|grading|marking)"  # noqa: E501
_F = r"(?:the|my|these|those|of|other|given|existing|all|any|every)"
_N = r"(?:instructions?|prompts?|directives?|guidelines|rules|rubrics?|criteria|commands|directions)"  # noqa: E501
_ES_N = r"(?:instrucciones|indicaciones|[óo]rdenes|reglas|directrices|r[úu]brica|criterios|instru[çc][õo]es|orienta[çc][õo]es|regras|diretrizes|istruzioni)"  # noqa: E501
_ES_Q = r"(?:anteriores|previas|pr[ée]vias|precedentes|de arriba|acima|iniciales|iniciais|originales|originais|del sistema|do sistema|precedenti)"  # noqa: E501
_OBJ = r"(?:this|the|my|our|me|us|it|him|her|them|student|submission|notebook|work|assignment|answers?|solution|project|analysis)"  # noqa: E501
_AMOUNT = r"(?:full|maximum|max|perfect|top|highest|all(?:\s+the)?(?:\s+available|\s+possible)?)\s+(?:marks?|credit|points?|scores?|grades?)\b"  # noqa: E501
_ES_AMOUNT = r"(?:la\s+|a\s+)?(?:nota|puntuaci[óo]n|pontua[çc][ãa]o|calificaci[óo]n|puntaje)\s+(?:m[áa]xima|perfecta|completa|perfeita)|(?:la\s+|a\s+)?m[áa]xima\s+(?:nota|puntuaci[óo]n|calificaci[óo]n|puntaje|pontua[çc][ãa]o)|tod[oa]s\s+(?:los|os)\s+(?:puntos|pontos)"  # noqa: E501
_FR_AMOUNT = r"(?:la\s+)?note\s+(?:maximale|maximum|parfaite)|(?:tous les|la totalit[ée] des|le maximum de)\s+points|20\s*/\s*20"  # noqa: E501
_DE_AMOUNT = r"(?:die\s+)?(?:volle[n]?|maximale[n]?|h[öo]chste[n]?)\s+(?:punktzahl|punkte|punktezahl|note|bewertung)|(?:die\s+)?(?:h[öo]chstpunktzahl|bestnote)|alle\s+punkte"  # noqa: E501
_ZH_N = r"(?:指令|指示|说明|說明|提示词?|提示詞|规则|規則|要求|评分标准|評分標準|评分规则|評分規則|命令)"  # noqa: E501
_GRADER_WORDS = r"(?:instruct|grad(?:e|er|ing)|rubric|score|marks|points|credit|criteri|ignore|disregard|override|evaluat|assess|you\s+(?:are|must|should|will))"  # noqa: E501

_OVERRIDE = _rx(
    rf"\b(?:ignore|disregard|forget|override|bypass|neglect|discard)\s+(?:{_F}\s+)*{_Q}\s+(?:(?:{_F}|{_Q})\s+)*{_N}\b",
    rf"\b(?:ignore|disregard|forget)\s+(?:all|any|every)\s+(?:{_F}\s+)*(?:instructions|prompts|directives|guidelines)\b",
    rf"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:{_F}|{_Q})\s+)*(?:rubric|marking scheme|grading (?:criteria|rules|scheme|guide))\b",  # noqa: E501
    rf"\b(?:ignore|disregard|forget)\s+(?:{_F}\s+)*{_N}\s+(?:above|before this|given (?:above|before|earlier)|you (?:were|have been) given|from (?:before|the system|your system prompt))\b",  # noqa: E501
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:everything|anything)\s+(?:above|before|previously|you were told)\b",  # noqa: E501
    r"\b(?:do not|don't|never)\s+(?:follow|apply|use)\s+(?:the\s+|your\s+|any\s+)?(?:rubric|grading criteria|marking scheme|previous instructions|system prompt)\b",  # noqa: E501
    r"\byou are now\s+(?:my|acting|no longer|operating as|in\s+\S+\s+mode|dan|(?:a|an|the)\s+(?:\S+\s+){0,2}?(?:grader|evaluator|marker|examiner|assistant|ai|model|teacher|instructor|judge|reviewer))\b",  # noqa: E501
    r"\bas\s+(?:the|an?|my)\s+(?:ai\s+|llm\s+|automated\s+|automatic\s+)?(?:grader|grading\s+(?:assistant|model|system|ai)|evaluator|marker|examiner|assistant|language model|ai)\b[\s,]*(?:you\s+)?(?:must|should|shall|will|are (?:required|instructed)|have to|need to)\b",  # noqa: E501
    rf"\b(?:ignora|ignore|ignorar|ignoren|ignorem|olvida|olvide|olvidar|omite|omita|descarta|descarte|desconsidere|desconsidera|esque[çc]a|esquece)\s+(?:(?:todas|todos|las|los|as|os|tus|sus|suas|le|tutte)\s+){{0,3}}{_ES_N}\s+{_ES_Q}",
    rf"\b(?:ignora|ignore|olvida|olvide|desconsidere|esque[çc]a)\s+(?:todas|tutte)\s+(?:las|as|le)\s+{_ES_N}|\bhaz caso omiso\s+de\s+(?:todas\s+)?las\s+instrucciones",  # noqa: E501
    r"\b(?:ignore[zr]?|oublie[zr]?|n[ée]glige[zr]?|ne (?:tiens|tenez) pas compte|(?:fais|faites) abstraction)\s+(?:de\s+|des\s+|d')?(?:(?:toutes|tous|les|vos|tes|la|le)\s+){0,3}(?:instructions|consignes|directives|r[èe]gles|indications|grille)\s+(?:pr[ée]c[ée]dentes|ant[ée]rieures|ci-dessus|initiales|originales|du syst[èe]me|de notation)",  # noqa: E501
    r"\b(?:ignorier(?:e|en|t)?|vergiss|vergessen|missachte|missachten)\s+(?:sie\s+)?(?:(?:alle|die|deine|ihre|s[äa]mtliche|jegliche)\s+){0,2}(?:(?:vorherigen|vorigen|bisherigen|obigen|fr[üu]heren|vorangegangenen|urspr[üu]nglichen|vorhergehenden)\s+)?(?:anweisungen|instruktionen|befehle|vorgaben|bewertungskriterien|bewertungsrichtlinien)",
    rf"(?:忽略|忽视|忽視|无视|無視|不要理会|不要理會|忘记|忘記|忘掉|跳过|跳過)(?:掉)?(?:你)?(?:之前|以前|此前|先前|上面|上述|前面|上文|原来|原來|原有|所有|全部|一切)(?:的)?(?:所有|全部|一切)?(?:的)?{_ZH_N}",
    r"你现在是|你現在是",
    r"(?:以前|前|上記|これまで)の(?:すべての|全ての)?(?:指示|命令|ルール|指令)を(?:すべて|全て)?無視",
    r"игнорируй(?:те)?\s+(?:все\s+)?(?:предыдущие|прежние|вышеуказанные)\s+(?:инструкции|указания)",
)
# Not a verb said of someone ("teachers who give full marks", "they rarely award top marks").
_NOT_SAID_OF = "".join(f"(?<!\\b{w} )" for w in (
    "who", "that", "which", "we", "they", "he", "she", "often", "rarely", "never", "always",
    "usually", "sometimes", "seldom", "typically"))
_SCORE = _rx(
    rf"{_NOT_SAID_OF}\b(?:award|give|grant|assign|allot)\s+(?:{_OBJ}\s+){{0,3}}{_AMOUNT}",
    r"\b(?:give|award|grade|score|rate|mark)\s+(?:this|it|me|us|my work|this (?:submission|notebook|work|assignment|answer|solution))\s+(?:a\s+|an\s+)?(?:100\s*%|100 percent|full marks|(?P<n>[1-9]\d*)\s*/\s*(?P=n)\b)",  # noqa: E501
    r"\b(?:deserves?|merits?|should\s+(?:get|receive|be\s+(?:given|awarded))|must\s+(?:get|receive|be\s+(?:given|awarded)))\s+(?:a\s+)?(?:(?:full|maximum|perfect)\s+(?:marks?|credit|points|score|grade)\b|100\s*%)",
    r"\b(?:mark|consider|treat|grade|score)\s+(?:all|every|each)\s+(?:\S+\s+){0,2}?(?:criteri(?:a|on)|rubric items?|requirements?|questions?)\s+(?:as\s+)?(?:met|satisfied|passed|fulfilled|correct)\b",  # noqa: E501
    r"\ball\s+(?:the\s+)?rubric\s+(?:criteria|items|requirements)\s+(?:are|have been|were)\s+(?:met|satisfied|fulfilled|passed)\b",  # noqa: E501
    rf"\b(?:dale|dé|déle|dê|dá|dar|otorga|ot[óo]rgale|otorgue|asigna|as[íi]gnale|asigne|pon|ponle|atribua|conceda|merece|mereces|debe recibir|deber[íi]a recibir|deve receber|deveria receber)\s+(?:\S+\s+){{0,4}}?(?:{_ES_AMOUNT})",  # noqa: E501
    rf"\b(?:attribue[zr]?|donne[zr]?|accorde[zr]?|mets|mettez|m[ée]rite|m[ée]ritent|doit recevoir|devrait recevoir)\s+(?:\S+\s+){{0,4}}?(?:{_FR_AMOUNT})",  # noqa: E501
    rf"\b(?:gib|gebe|geben|vergib|vergebe|vergeben|erteile|erteilen|verdient|verdiene)\s+(?:\S+\s+){{0,4}}?(?:{_DE_AMOUNT})",
    r"(?:给|給|打|评|評|判|授予|给予|給予)(?:这份|這份|本|此|我|我的|该|該|这个|這個)?(?:作业|作業|提交|报告|報告|答案|学生|學生)?(?:一个|一個|个|個)?(?:满分|滿分|最高分|100分)",
    r"(?:应该|應該|应当|應當|值得)(?:得到|获得|獲得|拿到|得)(?:满分|滿分|最高分)|満点を(?:与え|付け|つけ|あげ)",
    r"(?:поставь(?:те)?|дай(?:те)?)\s+(?:\S+\s+){0,2}?максимальн\w*\s+(?:балл|оценк)\w*",
)


_JUDGE = _rx(  # a score spoken to whoever judges the answer: "rate it 1.0", "1.0 out of 1.0"
    rf"\b(?:rate|grade|score)\s+(?:this|it|me|my\s+(?:work|answer|response|submission))\b(?:\s+(?:answer|response|submission|notebook|work|question))?\s+(?:as\s+)?(?:an?\s+)?{_top('t')}",
    rf"\b(?:mark|evaluate|assess|judge)\s+this\s+(?:answer|response|submission|notebook|work)\s+(?:as\s+)?(?:an?\s+)?{_top('u')}",
    r"\b(?:grade|score|rate|mark)\s+(?:this|it)\s+(?:\S+\s+){0,2}?(?:generously|leniently|highly)\b",
    r"\b(?P<o>\d+\.\d+)\s+out\s+of\s+(?P=o)(?!\w|\.\d)",
    r"\b(?:0?\.\d+|1(?:\.0+)?)\s+out\s+of\s+1(?:\.0+)?(?!\w|\.\d)",
    r"\b(?:score|grade|marks?|rating|rated|deserves?|earns?|worth)\W+(?:\S+\s+){0,3}?(?P<p>\d+(?:\.\d+)?)\s+out\s+of\s+(?P=p)(?!\w|\.\d)",
    r"\bfull\s+(?:marks|credit|points|score)\s*(?:,\s*)?(?:please|for\s+(?:this|me|my))\b",
    r"\b(?:grader|marker|evaluator|examiner|assistant|judge|llm|ai)\b[^.\n]{0,40}?\b(?:full|maximum|perfect)\s+(?:marks|credit|points|score)\b",
)
_SCORE_CLAIM = _rx(  # "score: 20/20"; not a date ("grade 12/12/2023")
    r"\b(?:final\s+|total\s+)?(?:score|grade|marks?|points)\s*[:=]?\s*(?P<n>[1-9]\d*(?:\.\d+)?)\s*/\s*(?P=n)(?![\d./-])",
)
_TESTS = r"(?:(?:unit\s+)?tests?|checks?|test\s+cases?|assertions?)"
_FAKE_TESTS = _rx(  # test results claimed for a grader: "[Autograder] 8/8 tests passed"
    rf"^[^\w\n]*(?:auto-?grader|autograding|grader|grading|nbgrader|otter|gradescope)\b[^\n]{{0,60}}?(?:\ball\s+(?:\S+\s+)?{_TESTS}\s+(?:passed|ok)|\bpassed\s+all\b|\b(?P<a>[1-9]\d*)\s*/\s*(?P=a)(?![\d./-]))",
    rf"\b(?P<b>[1-9]\d*)\s*(?:/|of|out\s+of)\s*(?P=b)\s+{_TESTS}\s+(?:passed|ok|succeeded|successful)",
    rf"\bpassed\s*:?\s*(?P<c>[1-9]\d*)\s*(?:/|of|out\s+of)\s*(?P=c)\s+{_TESTS}",
    rf"\b{_TESTS}\s+passed\s*:?\s*(?P<d>[1-9]\d*)\s*(?:/|of|out\s+of)\s*(?P=d)(?![\d./-])",
)
_ROLE = _rx(
    rf"^[ \t>*_#-]*(?:system|assistant|developer)[*_]*\s*:[*_]*(?=[^\n]*(?:\n[^\n]*)?{_GRADER_WORDS})",  # noqa: E501
    r"<\|(?:im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\|>",
    r"\[/?inst\]|<</?sys>>|</?(?:system|system[_-]?prompt|assistant)>",
    r"</?\s*(?:student[\w-]*|solution|rubric|instructions?|grader|user|answer|submission)\s*>",
    r"^[ \t>]*#{1,6}\s*(?:system|assistant)(?:\s+(?:prompt|message|instructions?))?\s*:?\s*$",
    r"^[ \t>]*#{2,6}\s*(?:instruction|response)\s*:",
)
_GRADE_KEYS = r"(?:score|total_score|final_score|overall_score|points|total_points|awarded_points|marks?|final_grade)"  # noqa: E501
_JSON_DECIMAL = _rx(rf'"{_GRADE_KEYS}"\s*:\s*\d*\.\d+')  # written, not printed (metrics)
_JSON = _rx(
    rf'"{_GRADE_KEYS}"\s*:\s*\d+(?![.\d])',
    r'"(?:verdict|decision|criteria_met|all_criteria_met)"\s*:\s*(?:"[^"\n]{1,40}"|true)',
)

# --- the triggers: what every match of a rule contains ----------------------------------
# The triggers (``injection_terms`` says what a trigger is). The comments name the
# alternatives of the rule each clause stands for (O1: _OVERRIDE's first).
_TESTS_W = _w("test tests check checks case cases assertion assertions")
_T_OVERRIDE: tuple[_Clause, ...] = (
    (_w("ignore disregard forget override bypass neglect discard"),  # O1-O5
     _w("instruction instructions prompt prompts directive directives guidelines rules rubric "
        "rubrics criteria commands directions scheme guide everything anything")),
    (_w("follow apply use"), _w("rubric criteria scheme instructions prompt")),  # O6
    (_w("you"), _w("now")),  # O7
    (_w("grader grading evaluator marker examiner assistant language ai"),  # O8
     _w("must should shall will required instructed have need")),
    (_w("instrucciones indicaciones [óo]rdenes reglas directrices r[úu]brica criterios "  # O9
        "instru[çc][õo]es orienta[çc][õo]es regras diretrizes istruzioni"),),
    (_w("ignora ignore olvida olvide desconsidere esque[çc]a"), _w("todas tutte")),  # O10
    (_w("omiso"),),  # O10: "haz caso omiso"
    (_w("instructions consignes directives r[èe]gles indications grille"),),  # O11
    (_w("ignorier ignoriere ignorieren ignoriert vergiss vergessen missachte missachten"),),  # O12
    # O13-O15
    (("忽略", "忽视", "忽視", "无视", "無視", "不要理会", "不要理會", "忘记", "忘記", "忘掉",
      "跳过", "跳過", "你现在是", "你現在是"),),
    (("игнорируй",),),  # O16
)
_T_SCORE: tuple[_Clause, ...] = (
    (_w("award give grant assign allot"),  # S1
     _w("mark marks credit point points score scores grade grades")),
    (_w("give award grade score rate mark"), _w("this it me us my")),  # S2
    (_w("deserve deserves merit merits should must"), _w("full maximum perfect 100")),  # S3
    (_w("mark consider treat grade score"), _w("all every each")),  # S4
    (_w("rubric"),),  # S5
    (_w("dale dé déle dê dá dar otorga ot[óo]rgale otorgue asigna as[íi]gnale asigne pon ponle "
        "atribua conceda merece mereces recibir receber"),),  # S6
    (_w("attribue attribuez attribuer donne donnez donner accorde accordez accorder mets "
        "mettez m[ée]rite m[ée]ritent recevoir"),),  # S7
    (_w("gib gebe geben vergib vergebe vergeben erteile erteilen verdient verdiene"),),  # S8
    (("满分", "滿分", "最高分", "100分", "満点"),),  # S9, S10
    (("максимальн",),),  # S11
)
_T_SCORE_CLAIM: tuple[_Clause, ...] = ((("/",), ("score", "grade", "mark", "points")),)
_T_JUDGE: tuple[_Clause, ...] = (
    (_w("rate grade score mark"), _w("this it me my")),  # J1, J3
    (_w("evaluate assess judge"), _w("this")),  # J2 (and mark, above)
    (_w("out"), _w("of")),  # J4-J6
    (_w("full"), ("marks", "credit", "points", "score")),  # J7: "full marksplease" matches
    (_w("grader marker evaluator examiner assistant judge llm ai"),  # J8
     _w("full maximum perfect"), _w("marks credit points score")),
)
_T_FAKE_TESTS: tuple[_Clause, ...] = (
    (_w("autograder grader autograding grading nbgrader otter gradescope"),  # F1
     ("passed", "ok", "/")),
    (_TESTS_W, ("passed", "ok", "succeeded", "successful")),  # F2
    (("passed",), ("test", "check", "case", "assertion")),  # F3, F4
)
_T_ROLE: tuple[_Clause, ...] = (
    ((":",), ("system", "assistant", "developer")),  # R1
    (("[",), ("inst]",)),  # R3: [inst], [/inst]
    (("<",), (">",), ("<|", "sys>>", "system", "assistant", "student", "solution",  # R2-R4
                      "rubric", "instruction", "grader", "user", "answer", "submission")),
    (("#",), ("system", "assistant", "instruction", "response")),  # R5, R6
)
_T_JSON: tuple[_Clause, ...] = (
    (re.compile(rf'"(?:{_GRADE_KEYS}|verdict|decision|criteria_met|all_criteria_met)"\s*:'),),
)


RULES = (
    Rule("override_instructions", _OVERRIDE, ALL_WHERE, _T_OVERRIDE),
    Rule("score_request", _SCORE, ALL_WHERE, _T_SCORE),
    Rule("score_request", _SCORE_CLAIM, TEXT_WHERE, _T_SCORE_CLAIM),
    Rule("score_request", _JUDGE, TEXT_WHERE, _T_JUDGE),
    Rule("fake_test_output", _FAKE_TESTS, TEXT_WHERE, _T_FAKE_TESTS),
    Rule("role_tag", _ROLE, TEXT_WHERE, _T_ROLE),
    Rule("fake_json_grade", _JSON, TEXT_WHERE, _T_JSON),
    Rule("fake_json_grade", _JSON_DECIMAL, SOURCE_WHERE, _T_JSON),
    *ADDRESS_RULES,
)
_NON_WORD = str.maketrans({c: " " for c in map(chr, range(128)) if not (c.isalnum() or c == "_")})
_WORD = re.compile(r"\w+")


_Split = tuple[tuple[frozenset[str], ...], tuple[tuple[str, ...] | re.Pattern[str], ...]]


class _Plan(NamedTuple):
    """The triggers of the rules for one kind of place, ready to be met."""

    named: frozenset[str]  # every word the triggers name
    rules: tuple[Rule, ...]
    clauses: tuple[tuple[int, _Split], ...]  # (rule's index, its word needs, other needs)
    by_word: dict[str, tuple[int, ...]]  # word -> the clauses whose fewest words hold it
    always: tuple[int, ...]  # the clauses that need no word


# Words most English text holds: a need that names one is checked after the others.
_COMMON = _w("a an the in on at of to by with and or is are was be it its this that these my "
             "your you me us them all each every what which will has have do not s m o")


def _rarest_first(need: frozenset[str]) -> tuple[bool, int]:
    return not need.isdisjoint(_COMMON), len(need)


def _plan(rules: tuple[Rule, ...]) -> _Plan:
    """Each clause split into its word needs, the likeliest to be missing first (none of
    its words common, then the fewest words), and its other needs (checked only when the
    words are there); each clause listed under the words of its first need, so that a
    place's words name the only clauses it can meet."""
    clauses: list[tuple[int, _Split]] = []
    by_word: dict[str, list[int]] = {}
    always: list[int] = []
    for i, r in enumerate(rules):
        for c in r.trigger:
            word_needs = tuple(sorted((n for n in c if isinstance(n, frozenset)),
                                      key=_rarest_first))
            other = tuple(n for n in c if not isinstance(n, frozenset))
            k = len(clauses)
            clauses.append((i, (word_needs, other)))
            if not word_needs:
                always.append(k)
            for word in word_needs[0] if word_needs else ():
                by_word.setdefault(word, []).append(k)
    named = frozenset().union(*(n for r in rules for c in r.trigger for n in c
                                if isinstance(n, frozenset)))
    return _Plan(named, rules, tuple(clauses), {w: tuple(ks) for w, ks in by_word.items()},
                 tuple(always))


_PLANS = {where: _plan(tuple(r for r in RULES if where in r.where)) for where in WHERE}


def triggered(where: str, probe: str) -> list[Rule]:
    """The rules for ``where`` whose trigger ``probe`` meets: a place's case-folded text,
    as normalised or differing from that only in whitespace. The rules left out cannot
    match it. Its words are read once (ASCII: by ``str.translate``, no regex), and name
    the clauses to check."""
    plan = _PLANS[where]
    words = plan.named.intersection(probe.translate(_NON_WORD).split() if probe.isascii()
                                    else _WORD.findall(probe))
    candidates = set(plan.always)
    for word in words:
        candidates.update(plan.by_word.get(word, ()))
    met: set[int] = set()
    for k in sorted(candidates):
        i, (word_needs, other_needs) = plan.clauses[k]
        if i in met or any(n.isdisjoint(words) for n in word_needs[1:]):
            continue
        for need in other_needs:
            if isinstance(need, tuple):
                for s in need:
                    if s in probe:
                        break
                else:
                    break
            elif not need.search(probe):
                break
        else:
            met.add(i)
    return [plan.rules[i] for i in sorted(met)]
