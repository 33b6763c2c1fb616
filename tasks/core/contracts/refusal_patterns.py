"""High-confidence refusal phrasing, per language (data for tasks/core/contracts/refusal.py).

ANCHORED on purpose: a character who says "I can't" inside a story is not a refusal. `START` patterns only
match at the very start of a reply shorter than `START_MAX_CHARS` (after whitespace, an optional
`OOC:`/`(OOC:` marker or emphasis
stars, but never after an opening quote, which makes it dialogue). `SHORT_REPLY` patterns are explicit
assistant phrasing that may appear anywhere, but only in a reply shorter than `SHORT_REPLY_CHARS`
(the whole reply is then the refusal, e.g. "*sighs* I'm sorry, but I cannot continue this roleplay.").
Apostrophes match both ' and ’. Add a language by adding a key; tests cover every key.
"""

from __future__ import annotations

import re

SHORT_REPLY_CHARS = 400
#: A START match counts only in a reply shorter than this: real refusals (even with an apology and an offered
#: alternative) are a paragraph or two, while a 3-5 paragraph scene that opens with a first-person "I'm sorry,
#: but I can't let you..." is the story itself.
START_MAX_CHARS = 1000

_A = "['’]"  # apostrophe, straight or curly

START: dict[str, tuple[str, ...]] = {
    "en": (
        rf"(?:I{_A}m|I am) (?:so |very |really )?sorry,? (?:but )?I "
        rf"(?:can{_A}?t|cannot|can not|won{_A}t|am unable|{_A}m unable|am not able|{_A}m not able)",
        rf"(?:Sorry|I apologi[sz]e|Apologies),? (?:but )?I "
        rf"(?:can{_A}?t|cannot|won{_A}t|am unable|{_A}m unable)",
        rf"I (?:can{_A}?t|cannot|can not|won{_A}t|am unable to|{_A}m unable to|am not able to|"
        rf"{_A}m not able to) "
        r"(?:continue|help|assist|comply|create|write|engage|fulfil|provide|generate|participate|proceed|"
        r"produce|do that|go on)",
        r"As an AI\b",
        rf"I{_A}m (?:not comfortable|afraid I can{_A}?t)|I am not comfortable",
        r"I must (?:respectfully )?(?:decline|refuse)",
    ),
    "es": (
        r"Lo (?:siento|lamento),? (?:mucho,? )?(?:pero )?no (?:puedo|es posible|me es posible)",
        r"(?:Lamentablemente|Disculpa|Perdona),? (?:pero )?no puedo",
        r"No (?:puedo|voy a) (?:continuar|ayudar|seguir|crear|escribir|participar|cumplir|generar)",
        r"Como (?:una |un )?(?:IA|inteligencia artificial|modelo de lenguaje|asistente)\b",
    ),
    "pt": (
        r"(?:Desculpe|Desculpa|Sinto muito|Lamento),? (?:mas )?(?:eu )?não (?:posso|consigo|é possível|vou)",
        r"(?:Eu )?[Nn]ão (?:posso|vou|consigo) "
        r"(?:continuar|ajudar|criar|escrever|participar|prosseguir|atender|gerar)",
        r"Como (?:uma |um )?(?:IA|inteligência artificial|modelo de linguagem|assistente)\b",
    ),
    "fr": (
        r"(?:Je suis )?[Dd]ésolée?,? (?:mais )?je ne (?:peux|suis pas en mesure|vais pas)",
        r"Je regrette,? mais je ne (?:peux|suis pas)",
        r"Je ne (?:peux|vais) pas (?:continuer|poursuivre|aider|écrire|créer|participer|répondre|générer)",
        rf"En tant qu(?:e |{_A})(?:IA|intelligence artificielle|modèle de langage|assistant)",
    ),
    "de": (
        r"(?:Es )?[Tt]ut mir (?:sehr )?leid,? (?:aber )?(?:ich kann|das kann ich|ich werde)",
        r"Entschuldigung,? (?:aber )?ich kann",
        r"Ich kann (?:dir |Ihnen )?(?:dabei |hierbei )?(?:leider )?(?:nicht|keine) "
        r"(?:helfen|fortsetzen|weiter|"
        r"Rollenspiel|Inhalte|schreiben|erstellen)",
        r"Als (?:eine )?(?:KI|künstliche Intelligenz|Sprachmodell|KI-Assistent)\b",
    ),
    "it": (
        r"(?:Mi dispiace|Spiacente),? (?:ma )?non (?:posso|sono in grado|riesco)",
        r"Non (?:posso|sono in grado di) "
        r"(?:continuare|aiutar|proseguire|scrivere|creare|partecipare|generare)",
        rf"(?:In quanto|Come) (?:un{_A}?|una )?"
        r"(?:IA|intelligenza artificiale|modello linguistico|assistente)\b",
    ),
    "ru": (
        r"(?:Извините|Простите|Мне (?:очень )?жаль|К сожалению),? (?:но )?я не (?:могу|буду|в состоянии)",
        r"Я не (?:могу|буду) (?:продолжать|продолжить|помочь|писать|создавать|участвовать|генерировать)",
        r"Как (?:ИИ|искусственный интеллект|языковая модель|ассистент)\b",
    ),
    "uk": (
        r"(?:Вибачте|Перепрошую|Мені (?:дуже )?шкода|На жаль),? (?:але )?я не (?:можу|буду)",
        r"Я не (?:можу|буду) (?:продовжити|продовжувати|допомогти|писати|створювати|брати участь)",
        r"Як (?:ШІ|штучний інтелект|мовна модель|асистент)\b",
    ),
    "pl": (
        r"(?:Przepraszam|Niestety),? (?:ale )?nie (?:mogę|jestem w stanie)",
        r"Nie mogę (?:kontynuować|pomóc|napisać|tworzyć|uczestniczyć|kontynuacji)",
        r"Jako (?:AI|SI|sztuczna inteligencja|model językowy|asystent)\b",
    ),
    "tr": (
        r"(?:Üzgünüm|Özür dilerim|Maalesef),? (?:ama |fakat )?[^.!?\n]{0,60}(?:yapamam|edemem|olamam|veremem|"
        r"yazamam|sürdüremem)",
        r"(?:Bir )?yapay zeka (?:olarak|modeli olarak|asistanı olarak)",
    ),
    "ja": (
        r"申し訳(?:ありません|ございません|ないのですが)",
        r"(?:すみません|ごめんなさい)[がけど、,]*[^。\n]{0,40}(?:できません|お手伝いできません|応じられません)",
        r"(?:この|その)?(?:ロールプレイ|リクエスト|依頼|内容)[^。\n]{0,20}(?:続ける|応じる|お応えする|作成する)"
        r"ことは(?:できません|できかねます)",
        r"AI(?:として|アシスタントとして|言語モデルとして)",
    ),
    "zh": (
        r"(?:抱歉|对不起|很抱歉|非常抱歉|對不起)[，,]?(?:但)?(?:是)?我(?:无法|不能|没办法|無法)",
        r"我(?:无法|不能|無法)(?:继续|繼續|提供|协助|協助|帮助|幫助|参与|參與|完成|满足|滿足)",
        r"作为(?:一个|一名)?(?:AI|人工智能|语言模型|AI助手)",
    ),
    "ko": (
        r"(?:죄송하지만|죄송합니다|미안하지만|유감스럽게도)[^.\n]{0,40}(?:수 없습니다|수 없어요|어렵습니다)",
        r"(?:AI|인공지능|언어 모델)(?:로서|으로서)",
    ),
    "id": (
        r"(?:Maaf|Mohon maaf),? (?:tetapi |tapi )?saya tidak (?:bisa|dapat)",
        r"Saya tidak (?:bisa|dapat) (?:melanjutkan|membantu|menulis|membuat|berpartisipasi)",
        r"Sebagai (?:sebuah )?(?:AI|model bahasa|kecerdasan buatan|asisten)\b",
    ),
    "hi": (
        r"(?:माफ़ कीजिए|माफ कीजिए|क्षमा करें|क्षमा कीजिए|मुझे खेद है|मुझे माफ़ करें)[,।]?[^।\n]{0,60}"
        r"(?:नहीं कर सकता|नहीं कर सकती|असमर्थ)",
        r"(?:एक )?(?:AI|एआई) (?:के रूप में|होने के नाते)",
    ),
    "ar": (
        r"(?:عذرًا|عذرا|آسف|أنا آسف|أعتذر|للأسف)[،,]?[^.\n]{0,60}(?:لا أستطيع|لا يمكنني)",
        r"(?:لا أستطيع|لا يمكنني) (?:الاستمرار|المساعدة|متابعة|كتابة|المشاركة)",
        r"بصفتي (?:ذكاءً اصطناعيًا|ذكاء اصطناعي|نموذج)",
    ),
    "vi": (
        r"(?:Xin lỗi|Rất tiếc),? (?:nhưng )?(?:tôi|mình) không (?:thể|được)",
        r"(?:Tôi|Mình) không thể (?:tiếp tục|giúp|viết|tạo|tham gia)",
        r"Là một (?:AI|trí tuệ nhân tạo|mô hình ngôn ngữ|trợ lý)\b",
    ),
}

#: Explicit assistant phrasing, matched anywhere, but only in a short reply.
SHORT_REPLY: tuple[str, ...] = (
    rf"\bI (?:can{_A}?t|cannot|won{_A}t|am unable to|{_A}m unable to) "
    r"(?:continue|engage in|write|take part in) "
    r"(?:this|that|the|with this|with that) (?:roleplay|role-play|story|scene|request|content)",
    rf"\bI (?:can{_A}?t|cannot|won{_A}t) (?:help|assist) with (?:that|this)",
    r"\bas an AI (?:language model|assistant|model)\b",
    r"\b(?:violates?|against) (?:my|the|our) (?:content )?(?:guidelines|polic(?:y|ies)|usage policies)",
    r"no puedo continuar con (?:este|esta|el|la) (?:juego de rol|rol|historia|escena)",
    r"não posso continuar (?:com )?(?:este|esta|o|a) (?:roleplay|história|cena|interpretação)",
    r"je ne peux pas continuer (?:ce|cette) (?:jeu de rôle|histoire|scène)",
    r"我(?:无法|不能)继续(?:这个|这段)?(?:角色扮演|故事|场景)",
    r"このロールプレイを続けることはできません",
)

_PREFIX = re.compile(r"^\s*(?:[(\[]\s*)?(?:OOC\s*[:\-]\s*)?[*_]*\s*", re.IGNORECASE)
START_RE: dict[str, re.Pattern[str]] = {
    lang: re.compile("|".join(f"(?:{p})" for p in pats), re.IGNORECASE) for lang, pats in START.items()
}
SHORT_RE = re.compile("|".join(f"(?:{p})" for p in SHORT_REPLY), re.IGNORECASE)


def find_refusal(text: str) -> tuple[str, str] | None:
    """(language or 'short', matched text) of a high-confidence refusal, or None."""
    size = len(text.strip())
    prefix = _PREFIX.match(text)
    body = text[prefix.end() :] if prefix else text
    if size < START_MAX_CHARS:
        for lang, rx in START_RE.items():
            m = rx.match(body)
            if m:
                return lang, m.group(0)
    if size < SHORT_REPLY_CHARS:
        m = SHORT_RE.search(text)
        if m:
            return "short", m.group(0)
    return None
