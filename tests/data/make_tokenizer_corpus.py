#!/usr/bin/env python3
"""Writes tokenizer_corpus.txt: the multilingual text the tokenizer is checked on against
the reference (tests/node/tokenizer-gemma.test.mjs). Hand-written passages in many languages
and scripts, code, whitespace and number patterns, emoji sequences, special-token look-alikes,
then deterministic pseudo-random text over many Unicode blocks (fixed seed). Run:
    python3 tests/data/make_tokenizer_corpus.py > tests/data/tokenizer_corpus.txt"""
import random

PROSE = [
# English
"""The harbour was quiet at dawn, except for the gulls arguing over a crate of herring.
Margaret counted the boats twice — seventeen, then eighteen — before she realised the last one was a reflection.
"Don't trust the water before breakfast," her grandfather used to say, and he was right more often than not.""",
"""In 1969, roughly 600 million people watched the Moon landing; by comparison, the 2022 World Cup final drew about 1.5 billion viewers.
Statistics like these (however approximate) show how broadcasting changed: satellites, cable, then streaming.""",
"""Q: What's the difference between a list and a tuple?
A: Lists are mutable; tuples aren't. That's the short answer — the long one involves hashing, memory layout & intent.""",
# French
"""Il était une fois, dans un petit village au bord de la Loire, une boulangère qui se levait à quatre heures du matin.
« Le pain n'attend pas », disait-elle en pétrissant la pâte. Ses croissants étaient célèbres jusqu'à Orléans, où l'on prétendait qu'ils guérissaient la mélancolie.""",
# German
"""Die Straßenbahn fährt um 7:45 Uhr ab, aber heute war sie wieder verspätet. Überraschend ist das nicht: Seit der Baustelle an der Königsallee kommt kaum ein Zug pünktlich.
Donaudampfschifffahrtsgesellschaftskapitän ist übrigens ein echtes Wort — zumindest behaupten das die Rätselhefte.""",
# Spanish
"""¿Dónde está la estación de autobuses? Preguntó el viajero, agotado tras doce horas de camino.
La señora, sin dejar de regar sus geranios, señaló hacia el norte: «Dos cuadras, y luego a la izquierda, junto a la panadería».""",
# Portuguese
"""A saudade é uma palavra difícil de traduzir. Não é só tristeza nem só lembrança; é a presença de uma ausência.
Em São Paulo, às três da tarde, o trânsito já está parado na Marginal — e ninguém parece surpreso.""",
# Italian
"""Ieri sera abbiamo cenato in una trattoria vicino al Pantheon: carbonara, carciofi alla giudia e un bicchiere di Frascati.
Il cameriere, un signore sulla settantina, ci ha raccontato che lavorava lì dal 1978. «Perché cambiare?», ha detto ridendo.""",
# Dutch
"""Het regende pijpenstelen toen we in Utrecht aankwamen, maar de fietsenstalling bij het station was gelukkig overdekt.
Gezellig is zo'n woord dat je pas begrijpt als je een avond met vrienden bij de kachel hebt doorgebracht.""",
# Polish
"""Pchnąć w tę łódź jeża lub ośm skrzyń fig. To zdanie zawiera wszystkie litery polskiego alfabetu.
Wczoraj w Krakowie padał śnieg, a dziś świeci słońce — typowa pogoda na przełomie marca i kwietnia.""",
# Czech
"""Příliš žluťoučký kůň úpěl ďábelské ódy. Věta, kterou zná každý, kdo kdy testoval české fonty.
V Praze na Karlově mostě stojí třicet soch a turisté se u nich fotí od rána do večera.""",
# Turkish
"""İstanbul'da Boğaz'ın iki yakası arasında vapurla geçmek, şehrin en güzel deneyimlerinden biridir.
Çay bahçesinde oturup simit yerken martıların çığlıklarını dinlemek ayrı bir keyif. Iğdır ile İzmir'i karıştırmayın!""",
# Vietnamese
"""Hà Nội vào mùa thu có mùi hoa sữa nồng nàn khắp các con phố. Người ta ngồi uống cà phê trứng bên hồ Hoàn Kiếm.
Tiếng Việt có sáu thanh điệu: ngang, huyền, sắc, hỏi, ngã, nặng — mỗi thanh thay đổi nghĩa của từ.""",
# Indonesian
"""Pagi itu, pasar tradisional di Yogyakarta sudah ramai sejak subuh. Pedagang menata sayur, buah, dan rempah-rempah di atas tikar.
Bahasa Indonesia menggunakan huruf Latin tanpa diakritik, sehingga relatif mudah dipelajari oleh penutur asing.""",
# Swahili
"""Habari za asubuhi! Leo tutasafiri kutoka Mombasa hadi Nairobi kwa treni ya SGR, safari ya takriban saa tano.
Haraka haraka haina baraka — methali hii inatukumbusha kwamba subira huvuta heri.""",
# Finnish / Hungarian / Estonian
"""Hyvää huomenta! Järvenpään kirjastossa on yli satatuhatta kirjaa, ja lukusali on auki myöhään illalla.
Árvíztűrő tükörfúrógép — ez a mondat tartalmazza az összes magyar ékezetes betűt.
Jõgeva lähedal asuvas külas elab umbes kakssada inimest; õhtuti kostab metsast öökulli huikamist.""",
# Icelandic / Norwegian / Swedish / Danish
"""Þjóðvegurinn liggur meðfram ströndinni og á veturna er hann oft lokaður vegna snjóflóða.
Blåbærsyltetøy på vafler er en norsk klassiker. Räksmörgås är ett ord med alla svenska bokstäver å, ä och ö.
Rødgrød med fløde er notorisk svært at udtale for ikke-danskere.""",
# Russian
"""Москва встретила нас мокрым снегом и пробками на Садовом кольце. В метро, как всегда, было тепло и многолюдно.
«Съешь же ещё этих мягких французских булок, да выпей чаю» — классическая панграмма для проверки шрифтов.
Достоевский писал по ночам, а днём спал; его черновики исписаны мелким, почти нечитаемым почерком.""",
# Ukrainian / Bulgarian / Serbian
"""Київ навесні — це каштани, що цвітуть уздовж Хрещатика, і кава з корицею на Андріївському узвозі.
Жълтата дюля беше щастлива, че пухът, който цъфна, замръзна като гьон.
Љубазни фењерџија чађавог лица хоће да ми покаже штос.""",
# Greek
"""Η Αθήνα το καλοκαίρι είναι καυτή· οι τουρίστες ανεβαίνουν στην Ακρόπολη νωρίς το πρωί για να αποφύγουν τη ζέστη.
Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. — μια ελληνική πάνγραμμα με όλα τα γράμματα.
Ο Σωκράτης έλεγε: «Ἓν οἶδα ὅτι οὐδὲν οἶδα» — με πολυτονικό σύστημα, όπως στα αρχαία κείμενα.""",
# Arabic
"""كانت القاهرة مزدحمة كالعادة، والشمس تلمع فوق مآذن الأزهر. جلسنا في مقهى الفيشاوي نشرب الشاي بالنعناع.
قال الشاعر: «إذا الشعب يوماً أراد الحياة فلا بد أن يستجيب القدر». الأرقام العربية: ٠١٢٣٤٥٦٧٨٩، وأيضاً 2024.
العربية تُكتب من اليمين إلى اليسار، وتستخدم التشكيل أحياناً: كَتَبَ، كُتِبَ، كِتَابٌ.""",
# Persian / Urdu
"""تهران در زمستان گاهی برفی می‌شود و کوه‌های البرز سفیدپوش می‌شوند. نیم‌فاصله در فارسی مهم است.
اردو زبان میں شاعری کی ایک طویل روایت ہے؛ غالب اور اقبال اس کے سب سے مشہور شاعر ہیں۔""",
# Hebrew
"""ירושלים בלילה שקטה להפליא; האבנים הזהובות של העיר העתיקה זוהרות באור הפנסים.
"שלום עליכם", אמר הזקן ומזג לנו כוס תה עם נענע. בעברית כותבים מימין לשמאל, עם ניקוד לפעמים: שָׁלוֹם.""",
# Hindi / Marathi / Nepali (Devanagari)
"""दिल्ली की सर्दियों में कोहरा इतना घना होता है कि सुबह दस बजे तक सूरज दिखाई नहीं देता।
चाय की दुकान पर लोग अख़बार पढ़ते हैं और राजनीति पर बहस करते हैं। संख्याएँ: १२३४५६७८९०।
मुंबईत पावसाळ्यात लोकल गाड्या उशिरा धावतात, पण लोक तरीही वेळेवर कामावर पोहोचतात.
काठमाडौंको असन बजारमा बिहानैदेखि भीड हुन्छ।""",
# Bengali / Tamil / Telugu / Kannada / Malayalam / Gujarati / Gurmukhi / Sinhala / Odia
"""কলকাতার ট্রামগুলো এখনও ধীরে ধীরে চলে, আর কলেজ স্ট্রিটে পুরোনো বইয়ের গন্ধ ভেসে বেড়ায়।
சென்னையில் மார்கழி மாதத்தில் இசைக் கச்சேரிகள் நடைபெறுகின்றன; கர்நாடக இசை ரசிகர்கள் கூடுகிறார்கள்.
హైదరాబాద్ బిర్యానీ ప్రపంచ ప్రసిద్ధి చెందింది. చార్మినార్ దగ్గర సాయంత్రం చాలా రద్దీగా ఉంటుంది.
ಬೆಂಗಳೂರಿನ ಹವಾಮಾನ ವರ್ಷಪೂರ್ತಿ ಆಹ್ಲಾದಕರವಾಗಿರುತ್ತದೆ.
കേരളത്തിലെ കായലുകളിലൂടെയുള്ള ഹൗസ്ബോട്ട് യാത്ര അവിസ്മരണീയമാണ്.
અમદાવાદની પોળોમાં જૂનાં લાકડાનાં મકાનો આજે પણ જોવા મળે છે.
ਅੰਮ੍ਰਿਤਸਰ ਦੇ ਹਰਿਮੰਦਰ ਸਾਹਿਬ ਵਿੱਚ ਲੰਗਰ ਦਿਨ ਰਾਤ ਚੱਲਦਾ ਹੈ।
කොළඹ නගරයේ ගාලු මුවදොර පිටියේ සවස් කාලයේ ළමයි සරුංගල් යවති.
ଓଡ଼ିଶାର ପୁରୀ ମନ୍ଦିରରେ ରଥଯାତ୍ରା ବହୁତ ପ୍ରସିଦ୍ଧ।""",
# Thai / Lao / Khmer / Myanmar
"""กรุงเทพมหานครเป็นเมืองที่ไม่เคยหลับ ตลาดนัดจตุจักรเปิดทุกสุดสัปดาห์และมีร้านค้ามากกว่าหนึ่งหมื่นร้าน
ภาษาไทยไม่เว้นวรรคระหว่างคำ ทำให้การตัดคำเป็นปัญหาที่น่าสนใจสำหรับคอมพิวเตอร์
ນະຄອນຫຼວງວຽງຈັນຕັ້ງຢູ່ແຄມແມ່ນ້ຳຂອງ.
ប្រាសាទអង្គរវត្តគឺជានិមិត្តរូបនៃប្រទេសកម្ពុជា។
ရန်ကုန်မြို့ရှိ ရွှေတိဂုံစေတီတော်သည် ညအချိန်တွင် ရွှေရောင်တောက်ပနေသည်။""",
# Chinese (simplified and traditional)
"""北京的秋天很短，但是非常美丽。香山的红叶吸引了成千上万的游客，周末的时候几乎寸步难行。
我们在胡同里找到一家小饭馆，老板做的炸酱面是我吃过最好吃的。价格也不贵：一碗只要十八块钱。
臺北的夜市熱鬧非凡，士林夜市的蚵仔煎和珍珠奶茶是必吃的美食。「學而時習之，不亦說乎？」——《論語》""",
# Japanese
"""東京の朝は早い。始発電車が動き出す午前五時ごろには、もう駅のホームに人が並んでいる。
コンビニでおにぎりとお茶を買って、会社へ向かうサラリーマンたち。「おはようございます」と挨拶を交わす。
ひらがな、カタカナ、漢字が混在する日本語は、世界でも珍しい表記体系を持っている。ｶﾀｶﾅの半角もある。""",
# Korean
"""서울의 밤은 화려하다. 남산타워에서 내려다보면 한강을 따라 불빛이 끝없이 이어진다.
한글은 1443년에 세종대왕이 창제했으며, 과학적인 문자 체계로 널리 알려져 있다. 김치찌개 먹을래요?
ㄱㄴㄷㄹ ㅏㅑㅓㅕ — 자모를 따로 쓰기도 한다.""",
# Georgian / Armenian / Ethiopic
"""თბილისის ძველ უბანში გოგირდის აბანოები ჯერ კიდევ მუშაობს, ზუსტად ისე, როგორც საუკუნეების წინ.
Երևանից Արարատ լեռը երևում է պարզ եղանակին, և այն հայերի համար խորհրդանշական նշանակություն ունի։
አዲስ አበባ በአፍሪካ ቀንድ ከሚገኙ ትላልቅ ከተሞች አንዷ ናት። ቡና በኢትዮጵያ ባህል ውስጥ ልዩ ቦታ አለው።""",
# Tibetan / Mongolian / Uyghur / Yiddish
"""བོད་ཀྱི་ཡི་གེ་ནི་སྔ་མོ་ནས་ད་བར་བེད་སྤྱོད་བྱེད་བཞིན་ཡོད།
ᠮᠣᠩᠭᠣᠯ ᠪᠢᠴᠢᠭ ᠨᠢ ᠳᠡᠭᠡᠷᠡ ᠡᠴᠡ ᠳᠣᠣᠰ᠎ᠠ ᠪᠢᠴᠢᠭᠳᠡᠳᠡᠭ᠃ Монгол хэл кирилл үсгээр ч бичигддэг.
ئۇيغۇر تىلى ئەرەب ئېلىپبەسى ئاساسىدا يېزىلىدۇ.
ייִדיש איז אַ שפּראַך מיט אַ לאַנגער געשיכטע.""",
]

RARE = [
"ⵜⴰⵎⴰⵣⵉⵖⵜ ⵜⵓⴳⴳⴰ ⵙ ⵜⵉⴼⵉⵏⴰⵖ — ⴰⵣⵓⵍ ⴼⵍⵍⴰⵡⵏ! (Tifinagh)",
"ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ — ᎣᏏᏲ, ᏙᎯᏧ? (Cherokee syllabary)",
"᚛ᚑᚌᚐᚋ ᚄᚉᚏᚔᚁᚓᚅ᚜ ᚛ᚁᚓᚈᚆ ᚂᚒᚔᚄ᚜ (Ogham)",
"ᚠᚢᚦᚨᚱᚲ ᚷᚹᚺᚾᛁᛃ ᛇᛈᛉᛊᛏᛒ ᛖᛗᛚᛜᛞᛟ (Elder Futhark runes)",
"ᐃᓄᒃᑎᑐᑦ ᑎᑎᕋᐅᓯᖅ — ᐊᐃ! (Canadian Aboriginal syllabics)",
"ꆈꌠꉙ ꀉꂿ ꄷꅪ (Yi)",
"ߒߞߏ ߞߊ߲ ߞߊ߬ ߛߓߍ߫ (N'Ko)",
"ꕙꔤ ꔳꕯ ꕉꕞ (Vai)",
"ދިވެހި ބަސް ތާނަ އަކުރުން ލިޔެވެއެވެ (Thaana)",
"ܠܫܢܐ ܣܘܪܝܝܐ ܥܬܝܩܐ ܗܘ (Syriac)",
"𐌰𐌽𐌰 𐌲𐌿𐍄𐌰 𐌸𐌹𐌿𐌳𐌰 (Gothic) · 𐐔𐐯𐑅𐐨𐑉𐐯𐐻 (Deseret) · 𐌀𐌁𐌂𐌃 (Old Italic)",
"𓀀𓀁𓀂 𓂀 𓃒𓃠 (Egyptian hieroglyphs) · 𒀀𒀁𒀂𒀭 (cuneiform) · 𐀀𐀁𐀂 (Linear B)",
"𝐀𝐁𝐂 𝑎𝑏𝑐 𝔄𝔅ℭ 𝕏𝕐ℤ 𝟘𝟙𝟚 (mathematical alphanumerics) ∀x∈ℝ: x²≥0, ∑ᵢ aᵢ ≤ ∏ⱼ bⱼ, ∫₀^∞ e^{-x} dx = 1",
"𠀀𠀁𠀂 𪚥 𩸽 𠮷野家 (CJK extension B and friends)",
"ꦗꦮ ꦲꦏ꧀ꦱꦫ (Javanese) · ᮃᮊ᮪ᮞᮛ ᮞᮥᮔ᮪ᮓ (Sundanese) · ᨅᨔ ᨕᨘᨁᨗ (Buginese)",
"ᥖᥭᥰ ᥖᥬᥲ (Tai Le) · ᦟᦲᧅ ᦎᦷᧈ (New Tai Lue) · ꪼꪕꪒꪾ (Tai Viet)",
"ᜆᜄᜎᜓᜄ᜔ (Baybayin) · ᝊᝓᝑᝒ (Buhid) · ᜱᜨᜳᜨᜳᜢ (Hanunoo)",
"ⲧⲙⲛ̄ⲧⲣⲙ̄ⲛ̄ⲕⲏⲙⲉ (Coptic) · ⰀⰁⰂⰃ (Glagolitic) · ꙮ (multiocular O)",
"Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇ — combining marks stacked: a̐é ö̲ ñ̃",
"e\u0301 vs é, A\u030a vs Å, \uFB01 ligature, \u2126 ohm, \u212B angstrom, ｆｕｌｌｗｉｄｔｈ, ⅷ, ①②③",
"zero\u200bwidth\u200cjoiner\u200dtest \u2060word\u2060joiner \ufeffBOM-in-text \u00adsoft\u00adhyphen",
"RTL mark \u200f and LTR mark \u200e, embedding \u202bأهلا\u202c, isolate \u2067שלום\u2069 end",
"The SentencePiece meta symbol ▁ written directly: ▁▁▁ ▁hello▁world ▁ ▁▁",
"Control chars: bell\x07 backspace\x08 vt\x0b ff\x0c esc\x1b[31mred\x1b[0m del\x7f and C1 \u0085\u009f",
"Private use: \ue000\ue001\uf8ff · noncharacters \ufdd0\ufffe · specials \ufffc\ufffd · plane 15: \U000f0000\U000ffffd",
"Braille ⠓⠑⠇⠇⠕ ⠺⠕⠗⠇⠙ · box drawing ┌─┬─┐│ │ │└─┴─┘ · blocks ▀▄█▌▐░▒▓ · arrows ←↑→↓↔↕⇐⇒⇔",
"Currency: $ € £ ¥ ₹ ₽ ₩ ₪ ₫ ₴ ₿ ¢ ₺ ₦ · Units: 5 km/h, 23 °C, 1.2 µm, 3 ㎏, 7 ㎞",
]

EMOJI = [
"Family: 👨‍👩‍👧‍👦 👩‍👩‍👦 👨‍👨‍👧‍👧 — couple with heart: 👩‍❤️‍👨 💏 — kiss: 👩‍❤️‍💋‍👩",
"Skin tones: 👋🏻 👋🏼 👋🏽 👋🏾 👋🏿 🤝🏽 🧑🏿‍💻 👩🏼‍🔬 🧑🏽‍🚀 👨🏾‍🍳",
"Flags: 🇯🇵 🇺🇸 🇫🇷 🇩🇪 🇧🇷 🇮🇳 🇿🇦 🇺🇦 🇰🇷 🇨🇦 🇪🇺 🇺🇳 🏴󠁧󠁢󠁳󠁣󠁴󠁿 🏴󠁧󠁢󠁷󠁬󠁳󠁿 🏳️‍🌈 🏳️‍⚧️ 🏴‍☠️",
"Keycaps: 1️⃣ 2️⃣ #️⃣ *️⃣ 🔟 · variation selectors: ❤ ❤️ ☺ ☺️ ✈ ✈️ ♻️ ⚠️",
"Faces: 😀😃😄😁😆😅🤣😂🙂🙃🫠😉😊😇🥰😍🤩😘 · 🫨🫷🫸 (newer) · 🧌🪬🪩",
"Professions: 🧑‍⚕️ 👩‍🌾 👨‍🏫 🧑‍⚖️ 👩‍✈️ 🧑‍🚒 👮‍♀️ 🕵️‍♂️ 💂 🥷 · animals: 🐈‍⬛ 🐕‍🦺 🐻‍❄️ 🐦‍🔥",
"Mixed with text: I ❤️ NY 🗽 but Paris 🇫🇷 is 🔥🔥🔥!!! 10/10 would visit again 👍🏾✨",
]

CODE = [
'''def fibonacci(n: int) -> list[int]:
    """Return the first n Fibonacci numbers."""
    a, b = 0, 1
    out = []
    for _ in range(n):
        out.append(a)
        a, b = b, a + b
    return out


if __name__ == "__main__":
    print(fibonacci(10))  # [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
''',
'''#include <stdio.h>
#include <stdlib.h>

/* count words on stdin */
int main(int argc, char **argv) {
	int c, in_word = 0;
	long words = 0;
	while ((c = getchar()) != EOF) {
		if (c == ' ' || c == '\\n' || c == '\\t') in_word = 0;
		else if (!in_word) { in_word = 1; words++; }
	}
	printf("%ld\\n", words);
	return argc > 1 ? EXIT_FAILURE : EXIT_SUCCESS;
}
''',
'''export async function fetchJson(url, { retries = 3, timeoutMs = 5_000 } = {}) {
  for (let attempt = 0; attempt <= retries; attempt++) {
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(), timeoutMs);
    try {
      const res = await fetch(url, { signal: ctrl.signal });
      if (!res.ok) throw new Error(`HTTP ${res.status}: ${res.statusText}`);
      return await res.json();
    } catch (err) {
      if (attempt === retries) throw err;
      await new Promise((r) => setTimeout(r, 2 ** attempt * 100));
    } finally {
      clearTimeout(timer);
    }
  }
}
''',
'''use std::collections::HashMap;

fn word_counts(text: &str) -> HashMap<&str, usize> {
    let mut counts = HashMap::new();
    for w in text.split_whitespace() {
        *counts.entry(w).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts() { assert_eq!(super::word_counts("a b a")["a"], 2); }
}
''',
'''package main

import (
	"fmt"
	"strings"
)

type Point struct{ X, Y float64 }

func (p Point) String() string { return fmt.Sprintf("(%.2f, %.2f)", p.X, p.Y) }

func main() {
	pts := []Point{{1, 2}, {3.5, -4}}
	var sb strings.Builder
	for i, p := range pts {
		fmt.Fprintf(&sb, "%d: %v\\n", i, p)
	}
	fmt.Print(sb.String())
}
''',
'''SELECT c.name, COUNT(o.id) AS orders, SUM(o.total) AS revenue
FROM customers c
LEFT JOIN orders o ON o.customer_id = c.id AND o.created_at >= '2024-01-01'
WHERE c.country IN ('DE', 'FR', 'IT')
GROUP BY c.name
HAVING COUNT(o.id) > 5
ORDER BY revenue DESC NULLS LAST
LIMIT 20;
''',
'''<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Table &amp; list</title></head>
<body>
  <h1>Results</h1>
  <table>
    <thead><tr><th>Name</th><th>Score</th></tr></thead>
    <tbody><tr><td>Ana</td><td>92</td></tr><tr><td>Bo</td><td>87</td></tr></tbody>
  </table>
  <ul><li><strong>bold</strong></li><li><em>italic</em> &lt;escaped&gt;</li></ul>
  <div class="note"><span>Tip:</span> use <code>&lt;b&gt;</code> sparingly.</div>
</body>
</html>
''',
'''{
  "name": "example",
  "version": "1.0.0",
  "nested": {"array": [1, 2.5, -3e10, true, false, null], "empty": {}, "unicode": "\\u00e9\\ud83d\\ude00"},
  "path": "C:\\\\Users\\\\me\\\\file.txt"
}
''',
'''#!/usr/bin/env bash
set -euo pipefail
for f in "$@"; do
  if [[ -f "$f" ]]; then
    printf '%s: %d lines\\n' "$f" "$(wc -l < "$f")"
  fi
done | sort -t: -k2 -n | tail -n 5
awk 'BEGIN{FS=","} NR>1 {s+=$3} END{print s/NR}' data.csv 2>/dev/null || echo "no data" >&2
''',
'''\\documentclass{article}
\\usepackage{amsmath}
\\begin{document}
The Gaussian integral: $\\int_{-\\infty}^{\\infty} e^{-x^2}\\,dx = \\sqrt{\\pi}$, and
\\begin{align}
  \\nabla \\cdot \\mathbf{E} &= \\frac{\\rho}{\\varepsilon_0} \\\\
  \\nabla \\times \\mathbf{B} &= \\mu_0 \\mathbf{J} + \\mu_0\\varepsilon_0 \\frac{\\partial \\mathbf{E}}{\\partial t}
\\end{align}
\\end{document}
''',
'''module Main where

import qualified Data.Map as M

main :: IO ()
main = do
  let m = M.fromListWith (+) [(w, 1 :: Int) | w <- words "to be or not to be"]
  mapM_ print (M.toList m)
  print $ foldr (\\x acc -> x * 2 : acc) [] [1..5]
''',
'''class Stack<T> {
    private items: T[] = [];
    push(item: T): void { this.items.push(item); }
    pop(): T | undefined { return this.items.pop(); }
    get size(): number { return this.items.length; }
}
const s = new Stack<string>();
s.push("a"); s.push("b");
console.log(s.pop(), s.size); // b 1
''',
'''# Markdown heading
## Sub-heading with `inline code` and **bold** and _italics_

- item one
- item two
  - nested item with a [link](https://example.com/path?query=1&x=y#frag)

| col A | col B |
|------:|:------|
|   1.5 | ok    |

> quoted text
> ```python
> print("fenced")
> ```
''',
'''    indented with four spaces
        eight spaces
\t\ttwo tabs then text
\t    tab then four spaces
    \tfour spaces then a tab
trailing spaces here    
trailing tab here\t
''',
]

WORDS = {
 "en": "time person year way day thing man world life hand part child eye woman place work week case point government company number group problem fact".split(),
 "de": "Zeit Jahr Mensch Frau Mann Kind Tag Hand Welt Stadt Haus Arbeit Frage Leben Land Weg Teil Schule".split(),
 "fr": "temps année monde vie homme femme jour main enfant chose pays ville maison travail question".split(),
 "ru": "время год человек жизнь день рука работа слово место лицо друг глаз вопрос дом сторона страна".split(),
 "ja": "時間 人 年 日本 世界 仕事 問題 学校 会社 子供 友達 電車 天気 映画 音楽".split(),
 "zh": "时间 人民 国家 世界 工作 问题 学校 公司 孩子 朋友 天气 电影 音乐 城市 历史".split(),
 "ar": "وقت سنة إنسان عالم حياة يوم يد عمل مدينة بيت سؤال طريق مدرسة".split(),
 "hi": "समय साल आदमी दुनिया जीवन दिन हाथ काम शहर घर सवाल रास्ता स्कूल".split(),
 "ko": "시간 사람 년 세계 생활 날 손 일 도시 집 질문 길 학교 친구".split(),
 "th": "เวลา ปี คน โลก ชีวิต วัน มือ งาน เมือง บ้าน คำถาม ทาง โรงเรียน".split(),
 "el": "χρόνος άνθρωπος κόσμος ζωή μέρα χέρι δουλειά πόλη σπίτι ερώτηση δρόμος σχολείο".split(),
 "he": "זמן שנה אדם עולם חיים יום יד עבודה עיר בית שאלה דרך".split(),
}

SPECIAL = [
"<start_of_turn>user\nWhat is the capital of Australia?<end_of_turn>\n<start_of_turn>model\nCanberra.<end_of_turn>",
"<bos><start_of_turn>system\nYou are terse.<end_of_turn>\n<eos><pad><pad><unk><mask>",
"Literal look-alikes: <start_of_turn <start_of_tur> <<bos>> </bos> <bos >< eos> <end_of_turn>>",
"Unused: <unused0><unused1> <unused42> <unused99>text<unused6241> and [multimodal] <start_of_image><end_of_image><image_soft_token>",
"Gemma 4 style: <|turn>user\nhi<turn|>\n<|turn>model\n<|channel>thought\n...<channel|>Hello!<turn|> <|think|> <|tool_call>call:f{a:<|\"|>x<|\"|>}<tool_call|>",
"HTML-ish added tokens: <table><tr><td>1</td></tr></table> <h1>T</h1><b>b</b><i>i</i><u>u</u><s>s</s><sub>2</sub><sup>3</sup> <a>link</a><img></img><bbox></bbox><iframe><footer>",
"Partial tags: <tabl <table <table > </ table> <TABLE> <td><td><td></td></td></td>",
]


def numbers(rng):
    out = []
    for _ in range(60):
        k = rng.randrange(9)
        if k == 0: out.append(str(rng.randrange(10 ** rng.randrange(1, 20))))
        elif k == 1: out.append(f"{rng.uniform(-1e6, 1e6):.{rng.randrange(0, 8)}f}")
        elif k == 2: out.append(f"{rng.randrange(1, 29):02d}.{rng.randrange(1, 13):02d}.{rng.randrange(1900, 2100)}")
        elif k == 3: out.append(f"+{rng.randrange(1, 999)} ({rng.randrange(100, 999)}) {rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}")
        elif k == 4: out.append(hex(rng.getrandbits(rng.choice([8, 16, 32, 64]))))
        elif k == 5: out.append(f"{rng.uniform(0, 100):.1e}")
        elif k == 6: out.append(f"{rng.randrange(1000000):,}".replace(",", rng.choice([",", ".", " ", "'", "\u202f"])))
        elif k == 7: out.append(f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}")
        else: out.append("".join(rng.choice("0123456789") for _ in range(rng.randrange(20, 60))))
    return out


def whitespace(rng):
    lines = []
    for n in list(range(1, 41)) + [63, 64, 65, 100]:
        lines.append(f"a{' ' * n}b")
        lines.append(f"x{chr(9) * (n % 35 + 1)}y")
    for _ in range(40):
        parts = [rng.choice(["word", "ß", "中", "🙂", "٣", "", "\u3000", "\u00a0", "—"]) for _ in range(4)]
        seps = [rng.choice([" ", "  ", "\t", " \t ", "\t\t", "   ", "\u00a0", "\u3000", "\u2009", "\r", " \r "]) for _ in range(4)]
        lines.append("".join(p + s for p, s in zip(parts, seps)))
    lines.append(" leading space")
    lines.append("    leading four")
    lines.append("trailing one ")
    lines.append("\t")
    lines.append("   ")
    return lines


def random_blocks(rng):
    ranges = [(0x20, 0x7e), (0xa0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff), (0x530, 0x58f), (0x590, 0x5ff),
              (0x600, 0x6ff), (0x900, 0x97f), (0x980, 0x9ff), (0xe00, 0xe7f), (0x10a0, 0x10ff), (0x1100, 0x11ff),
              (0x13a0, 0x13f4), (0x1680, 0x169c), (0x16a0, 0x16f0), (0x2d30, 0x2d67), (0x1e00, 0x1eff),
              (0x2000, 0x206f), (0x2100, 0x27bf), (0x3040, 0x30ff), (0x4e00, 0x9fff), (0xac00, 0xd7a3),
              (0xa000, 0xa48c), (0xfb00, 0xfdff), (0xfe70, 0xfeff), (0xff00, 0xffef), (0x10000, 0x1007f),
              (0x10330, 0x1034a), (0x1d400, 0x1d7ff), (0x1f300, 0x1faff), (0x20000, 0x2a6df), (0xe0020, 0xe007f)]
    lines = []
    for _ in range(700):
        lo, hi = rng.choice(ranges)
        words = []
        for _ in range(rng.randrange(1, 9)):
            if rng.random() < 0.3:
                lo, hi = rng.choice(ranges)
            cps = [rng.randrange(lo, hi + 1) for _ in range(rng.randrange(1, 9))]
            words.append("".join(chr(c) for c in cps if not 0xd800 <= c <= 0xdfff))
        lines.append(rng.choice([" ", "  ", "\t", ""]).join(words))
    return lines


def mixed_sentences(rng):
    lines = []
    langs = list(WORDS)
    for i in range(900):
        a, b = rng.sample(langs, 2)
        ws = [rng.choice(WORDS[rng.choice([a, a, b])]) for _ in range(rng.randrange(3, 14))]
        if rng.random() < 0.4: ws[0] = ws[0].capitalize()
        if rng.random() < 0.3: ws.insert(rng.randrange(len(ws)), str(rng.randrange(10 ** rng.randrange(1, 7))))
        if rng.random() < 0.15: ws.insert(rng.randrange(len(ws)), rng.choice(EMOJI_ATOMS))
        if rng.random() < 0.1: ws.insert(rng.randrange(len(ws)), rng.choice(SPECIAL_ATOMS))
        sep = " " if rng.random() < 0.85 else rng.choice(["", "  ", "\t", "、", "，"])
        lines.append(sep.join(ws) + rng.choice([".", "!", "?", "…", "。", "؟", "", ":", ";", " —"]))
    return lines


EMOJI_ATOMS = "😀 👍🏽 🇯🇵 👨‍👩‍👧 ❤️ 🔥 ✨ 🏳️‍🌈 🐈‍⬛ 1️⃣".split()
SPECIAL_ATOMS = ["<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<pad>", "<unused3>", "<table>", "</td>", "<mask>", "\u2581\u2581"]


def main():
    rng = random.Random(20261129)
    parts = []
    parts += PROSE
    parts += RARE
    parts += EMOJI
    parts += CODE
    parts += SPECIAL
    parts.append("\n".join(" ".join(numbers(rng)[i:i + 6]) for i in range(0, 60, 6)))
    parts += ["\n".join(whitespace(rng))]
    parts += ["\n" * n + f"after {n} newlines" for n in (1, 2, 3, 5, 8, 13, 21, 31, 32, 33, 40, 70)]
    parts += ["\r\n".join(["windows", "line", "endings", ""]), "mixed\r\n\n\r\r\n end"]
    parts.append("\n".join(mixed_sentences(rng)))
    parts.append("\n".join(random_blocks(rng)))
    # the same hand-written passages once more, shuffled and re-joined, so passages meet new neighbours
    shuffled = PROSE + RARE + EMOJI + SPECIAL
    rng.shuffle(shuffled)
    parts.append(" ".join(p.replace("\n", rng.choice([" ", "\n", "  "])) for p in shuffled))
    print("\n\n".join(parts), end="")


main()
