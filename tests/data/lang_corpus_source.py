# ruff: noqa: E501  (natural-language data: sentences are kept whole)
"""Hand-written roleplay paragraphs (3 per interface language) from which language_corpus.jsonl is built.

Run `python tests/data/lang_corpus_build.py` to regenerate the JSONL (derived mixes and mojibake included).
"""

CLEAN: dict[str, list[str]] = {
    "en": [
        '*Mira leans against the tavern counter and smiles.* The rain has not stopped since morning, and the roads '
        'out of Greyhaven are nothing but mud now. "You look like you have walked a long way, traveller," she says, '
        'sliding a mug of warm cider towards you. "Sit down, dry your cloak by the fire, and tell me what brings you '
        'to our little town." Behind her, the old bard tunes his lute and hums a song about the northern mountains. '
        "The smell of fresh bread drifts from the kitchen.",
        "Captain Ortega studied the star map for a long moment before answering. The engines were failing, the crew "
        "was exhausted, and the nearest station was still three days away. \"We can make it,\" he finally said, "
        "though his voice lacked conviction. He tapped the glowing screen and traced a route around the asteroid "
        'field. "If we save power and nobody panics, we will reach Kepler Station before the oxygen runs out." '
        "Lieutenant Sato nodded slowly and went to wake the others.",
        "The library was silent except for the soft ticking of the clock above the door. Elena ran her fingers along "
        "the spines of the old books, searching for the one her grandmother had described. *She pauses, frowning.* "
        '"It should be right here," she whispers. A thin layer of dust covered the shelf, but one volume looked as '
        "if it had been touched recently. She pulled it out carefully, and a folded letter slipped from between its "
        "pages.",
    ],
    "es": [
        "*Lucía se apoya en la barandilla del balcón y mira el mar.* El sol se está poniendo sobre Valparaíso y las "
        'gaviotas vuelan bajo sobre el puerto. "No esperaba verte aquí esta noche", dice con una sonrisa tímida. '
        '"Pensé que ya te habías marchado a Madrid con tu hermano." El viento le despeina el cabello mientras espera '
        "tu respuesta. A lo lejos, se oye la música de una fiesta en la plaza.",
        "El detective Ramírez encendió un cigarrillo y observó la calle mojada desde la ventana de su oficina. Hacía "
        'tres semanas que nadie sabía nada de la señora Castillo. "Alguien en este barrio está mintiendo", murmuró '
        "mientras repasaba sus notas. Sobre la mesa había una fotografía antigua, una llave oxidada y un billete de "
        "tren a Sevilla. Decidió que al amanecer visitaría de nuevo la panadería de la esquina. Tal vez el panadero "
        "recordaría algo más.",
        "El bosque estaba en silencio cuando llegaron al claro. Martín dejó la mochila en el suelo y sacó el mapa "
        'que les había dado el guardabosques. "Según esto, la cabaña debería estar al otro lado del río", explicó, '
        'señalando una línea azul. *Ana suspira y se sienta sobre una piedra.* "Entonces descansemos un poco antes '
        'de cruzar, tengo los pies destrozados." Él asintió y repartió las últimas galletas.',
    ],
    "pt": [
        "*Marina sorri e fecha o livro devagar.* A chuva continuava caindo sobre os telhados de Ouro Preto, e a "
        'cidade parecia ainda mais antiga naquela tarde cinzenta. "Eu não sabia que você também gostava de poesia", '
        'ela disse, com os olhos brilhando. "Meu avô costumava ler esses versos para mim quando eu era criança." Ela '
        "ofereceu uma xícara de café fresco e puxou uma cadeira para perto da janela. Lá fora, um cachorro latia "
        "para as poças d'água.",
        "O capitão Henrique olhou para o horizonte e percebeu que a tempestade estava chegando mais rápido do que "
        "esperava. Os marinheiros corriam de um lado para o outro, amarrando as velas e prendendo os barris. "
        '"Todos para os seus postos!", gritou ele com a voz firme. O navio balançava com força, mas ninguém parecia '
        "ter medo. Joana, a jovem cartógrafa, segurava o mapa contra o peito para que não se molhasse. Ela sabia que "
        "a ilha estava perto.",
        "Quando chegamos à fazenda, o sol já estava se pondo atrás das montanhas. Dona Benedita nos esperava na "
        'varanda com um sorriso enorme e um bolo de fubá ainda quente. "Entrem, entrem, vocês devem estar cansados '
        'da viagem", disse ela, abrindo a porta. A casa cheirava a lenha e a café passado na hora. Depois do jantar, '
        "ficamos ouvindo as histórias dela sobre os tempos em que a cidade ainda não tinha luz elétrica. Ninguém "
        "quis ir dormir cedo.",
    ],
    "fr": [
        "*Camille pose sa tasse de thé et lève les yeux vers toi.* Il pleut sur Paris depuis le début de la "
        "matinée, et les rues du Marais sont presque désertes. « Je ne pensais pas que tu viendrais aujourd'hui », "
        "dit-elle doucement. « Assieds-toi, je vais te raconter ce que j'ai découvert dans les archives de mon "
        "grand-père. » Elle sort une vieille enveloppe jaunie de son sac. Sur le papier, quelqu'un a dessiné une "
        "carte de la Bretagne avec une croix rouge près de la côte.",
        "Le commissaire Moreau referma le dossier avec un soupir fatigué. Depuis trois jours, il n'avait presque pas "
        "dormi et l'enquête n'avançait toujours pas. « Quelqu'un dans ce village sait quelque chose », murmura-t-il "
        "en regardant par la fenêtre. La boulangère, le maire et même le vieux curé semblaient cacher un secret. Il "
        "décida de retourner à l'église le lendemain matin. Cette fois, il poserait les bonnes questions.",
        "La forêt était plongée dans un silence étrange lorsque Léa franchit le vieux pont de pierre. Les arbres "
        "semblaient se pencher au-dessus du chemin comme pour l'observer. Elle serra la lanterne contre elle et "
        "continua d'avancer malgré la peur. « Encore quelques pas », se répéta-t-elle à voix basse. Au loin, une "
        "lumière dorée brillait entre les branches. C'était sans doute la maison de la sorcière dont parlaient les "
        "anciens.",
    ],
    "de": [
        "*Lena lehnt sich an den Türrahmen und verschränkt die Arme.* Draußen fällt der erste Schnee des Jahres auf "
        "die Dächer von Heidelberg. „Du bist also doch gekommen“, sagt sie und lächelt vorsichtig. „Ich dachte "
        "schon, du hättest unsere Verabredung vergessen.“ In der Küche pfeift der Wasserkessel, und es riecht nach "
        "Zimt und frisch gebackenen Plätzchen. Sie nimmt dir den nassen Mantel ab und hängt ihn an den Haken.",
        "Kommissar Becker starrte lange auf das Foto, das vor ihm auf dem Schreibtisch lag. Seit drei Wochen fehlte "
        "von dem jungen Studenten jede Spur. „Irgendjemand in dieser Stadt weiß mehr, als er zugibt“, murmelte er "
        "leise. Er griff nach seinem Mantel und verließ das Büro, ohne sich zu verabschieden. Der Regen prasselte "
        "auf das Kopfsteinpflaster, während er zur alten Buchhandlung am Marktplatz ging. Dort hatte man den Jungen "
        "zuletzt gesehen.",
        "Der Wald war dunkel und still, als die beiden Wanderer die alte Hütte erreichten. Jonas stellte seinen "
        "Rucksack ab und zündete eine Kerze an. »Hier können wir die Nacht verbringen«, sagte er erleichtert. Marie "
        "setzte sich auf die knarrende Holzbank und rieb sich die kalten Hände. Durch die Ritzen in den Wänden pfiff "
        "der Wind, aber das Feuer im Ofen wärmte bald den ganzen Raum. Sie teilten sich das letzte Stück Brot und "
        "lauschten dem Regen an der Straße.",
    ],
    "it": [
        "*Giulia si appoggia al parapetto del ponte e guarda l'acqua scorrere.* Il sole sta tramontando su Firenze "
        'e le campane del Duomo suonano in lontananza. "Non pensavo che saresti venuto davvero", dice con un '
        'sorriso timido. "Ho portato il quaderno di mia nonna, quello con le ricette segrete." Lo apre con cura e '
        "ti mostra una pagina scritta a mano, piena di macchie di farina. Una leggera brezza porta il profumo dei "
        "tigli del giardino vicino.",
        "Il commissario Rinaldi spense la sigaretta e guardò fuori dalla finestra del suo ufficio. Da tre giorni la "
        'pioggia non smetteva di cadere sulle strade di Napoli. "Qualcuno in questo quartiere sa esattamente cosa è '
        'successo", mormorò tra sé e sé. Sulla scrivania c\'erano una vecchia fotografia, una chiave arrugginita e '
        "un biglietto del treno per Bologna. Decise che la mattina seguente sarebbe tornato dal fornaio all'angolo. "
        "Forse questa volta avrebbe ottenuto una risposta sincera.",
        "Quando arrivammo al rifugio, la neve aveva ormai coperto tutto il sentiero. Marco accese il fuoco nel "
        'camino mentre io preparavo una zuppa calda con quello che restava nello zaino. "Domani, se il tempo '
        'migliora, proveremo a raggiungere la vetta", disse lui con entusiasmo. Io annuii, anche se le gambe mi '
        "facevano ancora male. Fuori il vento ululava tra gli abeti, ma dentro si stava bene. Restammo svegli fino "
        "a tardi a parlare dei nostri sogni.",
    ],
    "ru": [
        "*Анна откладывает книгу и поднимает на тебя глаза.* За окном уже третий день идёт снег, и улицы Петербурга "
        "почти опустели. «Я не думала, что ты придёшь так рано», — говорит она с лёгкой улыбкой. «Садись ближе к "
        "печке, я сейчас поставлю чайник». На столе лежат старые письма, перевязанные выцветшей синей лентой. Она "
        "осторожно берёт одно из них и начинает читать вслух.",
        "Капитан Волков долго смотрел на карту, прежде чем ответить. Корабль получил серьёзные повреждения, а до "
        "ближайшего порта оставалось ещё несколько дней пути. «Мы справимся, если все будут выполнять приказы», — "
        "наконец сказал он. Матросы переглянулись, но никто не стал спорить. Молодой штурман Сергей склонился над "
        "приборами и начал пересчитывать курс. Ветер усиливался с каждой минутой.",
        "Когда мы добрались до деревни, солнце уже садилось за лесом. Бабушка встретила нас у калитки и сразу "
        "повела в дом, где пахло свежим хлебом и малиновым вареньем. «Проходите, проходите, вы, наверное, совсем "
        "замёрзли», — приговаривала она. После ужина мы долго сидели на крыльце и слушали, как поют сверчки. Дедушка "
        "рассказывал истории о войне и о том, как строил этот дом своими руками. Никому не хотелось идти спать.",
    ],
    "uk": [
        "*Оксана відкладає книжку й дивиться на тебе.* За вікном уже третій день падає сніг, і вулиці Львова майже "
        "порожні. «Я не думала, що ти прийдеш так рано», — каже вона з легкою усмішкою. «Сідай ближче до грубки, я "
        "зараз поставлю чайник». На столі лежать старі листи, перев'язані вицвілою синьою стрічкою. Вона обережно "
        "бере один із них і починає читати вголос.",
        "Капітан Коваленко довго дивився на мапу, перш ніж відповісти. Корабель отримав серйозні пошкодження, а до "
        "найближчого порту залишалося ще кілька днів шляху. «Ми впораємося, якщо всі виконуватимуть накази», — "
        "нарешті сказав він. Моряки перезирнулися, але ніхто не став сперечатися. Молодий штурман Андрій схилився "
        "над приладами й почав перераховувати курс. Вітер посилювався щохвилини.",
        "Коли ми дісталися до села, сонце вже сідало за лісом. Бабуся зустріла нас біля хвіртки й одразу повела до "
        "хати, де пахло свіжим хлібом і малиновим варенням. «Заходьте, заходьте, ви, мабуть, зовсім змерзли», — "
        "примовляла вона. Після вечері ми довго сиділи на ґанку й слухали, як співають цвіркуни. Дідусь розповідав "
        "історії про своє дитинство і про те, як будував цю хату власними руками. Нікому не хотілося йти спати.",
    ],
    "pl": [
        "*Kasia odkłada książkę i podnosi na ciebie wzrok.* Za oknem od trzech dni pada śnieg, a ulice Krakowa są "
        "prawie puste. „Nie sądziłam, że przyjdziesz tak wcześnie” — mówi z lekkim uśmiechem. „Usiądź bliżej "
        "kominka, zaraz nastawię czajnik”. Na stole leżą stare listy przewiązane wyblakłą niebieską wstążką. "
        "Ostrożnie bierze jeden z nich i zaczyna czytać na głos.",
        "Kapitan Nowak długo wpatrywał się w mapę, zanim odpowiedział. Statek był poważnie uszkodzony, a do "
        "najbliższego portu zostało jeszcze kilka dni drogi. „Damy radę, jeśli wszyscy będą wykonywać rozkazy” — "
        "powiedział w końcu. Marynarze spojrzeli po sobie, ale nikt się nie sprzeciwił. Młody nawigator Tomek "
        "pochylił się nad przyrządami i zaczął przeliczać kurs. Wiatr z każdą minutą stawał się silniejszy.",
        "Kiedy dotarliśmy do wsi, słońce już zachodziło za lasem. Babcia przywitała nas przy furtce i od razu "
        "zaprowadziła do domu, gdzie pachniało świeżym chlebem i konfiturą malinową. „Wchodźcie, wchodźcie, pewnie "
        "zupełnie zmarzliście” — powtarzała. Po kolacji długo siedzieliśmy na ganku i słuchaliśmy świerszczy. Dziadek "
        "opowiadał historie o swojej młodości i o tym, jak własnymi rękami zbudował ten dom. Nikt nie chciał iść spać.",
    ],
    "tr": [
        "*Elif kitabını kapatıp sana bakıyor.* Üç gündür İstanbul'a kar yağıyor ve sokaklar neredeyse bomboş. "
        '"Bu kadar erken geleceğini düşünmemiştim", diyor hafif bir gülümsemeyle. "Sobanın yanına otur, hemen çay '
        'demliyorum." Masanın üzerinde solmuş mavi bir kurdeleyle bağlanmış eski mektuplar duruyor. Birini '
        "dikkatlice alıp yüksek sesle okumaya başlıyor.",
        "Kaptan Yılmaz cevap vermeden önce uzun süre haritaya baktı. Gemi ciddi şekilde hasar görmüştü ve en yakın "
        'limana daha birkaç günlük yol vardı. "Herkes emirlere uyarsa bunu başarırız", dedi sonunda. Denizciler '
        "birbirlerine baktılar ama kimse itiraz etmedi. Genç dümenci Emre aletlerin üzerine eğildi ve rotayı yeniden "
        "hesaplamaya başladı. Rüzgâr her dakika daha da şiddetleniyordu.",
        "Köye vardığımızda güneş çoktan ormanın arkasında batıyordu. Babaannem bizi bahçe kapısında karşıladı ve "
        'hemen taze ekmek ile ahududu reçeli kokan eve götürdü. "Gelin, gelin, kim bilir ne kadar üşüdünüz", deyip '
        "duruyordu. Akşam yemeğinden sonra uzun süre verandada oturup cırcır böceklerini dinledik. Dedem gençliğine "
        "dair hikâyeler anlattı ve bu evi kendi elleriyle nasıl inşa ettiğini söyledi. Kimse uyumaya gitmek istemedi.",
    ],
    "ja": [
        "*さくらは本を閉じて、あなたを見上げる。* 外では三日前から雪が降り続いていて、京都の通りはほとんど人がいない。"
        "「こんなに早く来るとは思わなかった」と、彼女は小さく笑いながら言った。「ストーブのそばに座って。すぐにお茶を"
        "いれるから。」テーブルの上には、色あせた青いリボンで結ばれた古い手紙が置いてある。彼女はその一通をそっと手に"
        "取り、声に出して読み始めた。",
        "山田船長は答える前に、長い間地図を見つめていた。船はひどく損傷しており、最寄りの港まではまだ数日かかる。"
        "「全員が命令に従えば、必ず乗り越えられる」と、彼はようやく口を開いた。船員たちは顔を見合わせたが、誰も反論"
        "しなかった。若い航海士の健太は計器の上に身をかがめ、進路を計算し直し始めた。東京大学医学部附属病院。"
        "風は刻一刻と強くなっていった。",
        "村に着いたとき、太陽はもう森の向こうに沈みかけていた。祖母は門のところで私たちを迎え、焼きたてのパンと木いち"
        "ごのジャムの香りがする家へすぐに案内してくれた。「さあ、入って入って。きっと体が冷えたでしょう」と、何度も繰"
        "り返していた。夕食のあと、私たちは縁側に座って、長い間虫の声を聞いていた。祖父は若い頃の話や、この家を自分の"
        "手で建てたときの話をしてくれた。誰も寝たいとは思わなかった。",
    ],
    "ko": [
        "*지은이는 책을 덮고 당신을 올려다본다.* 밖에는 사흘째 눈이 내리고 있어서 서울의 거리는 거의 텅 비어 있다. "
        '"이렇게 일찍 올 줄은 몰랐어"라고 그녀가 살짝 웃으며 말한다. "난로 옆에 앉아. 금방 차를 끓여 줄게." 탁자 '
        "위에는 빛바랜 파란 리본으로 묶인 오래된 편지들이 놓여 있다. 그녀는 그중 한 통을 조심스럽게 집어 들고 소리 "
        "내어 읽기 시작한다.",
        "박 선장은 대답하기 전에 한참 동안 지도를 바라보았다. 배는 심하게 손상되었고 가장 가까운 항구까지는 아직 "
        '며칠이 더 걸렸다. "모두가 명령을 따른다면 우리는 해낼 수 있다"라고 그가 마침내 말했다. 선원들은 서로를 '
        "바라보았지만 아무도 반대하지 않았다. 젊은 항해사 민수는 계기판 위로 몸을 숙이고 항로를 다시 계산하기 "
        "시작했다. 바람은 매분마다 더 거세졌다.",
        "우리가 마을에 도착했을 때 해는 이미 숲 너머로 지고 있었다. 할머니는 대문 앞에서 우리를 맞이하시고 갓 구운 "
        '빵과 산딸기 잼 냄새가 나는 집으로 곧장 데려가셨다. "어서 들어와라, 많이 추웠지?"라고 할머니는 계속 '
        "말씀하셨다. 저녁을 먹은 뒤 우리는 오랫동안 마루에 앉아 귀뚜라미 소리를 들었다. 할아버지는 젊은 시절 "
        "이야기와 이 집을 직접 지으신 이야기를 들려주셨다. 아무도 자러 가고 싶어 하지 않았다.",
    ],
    "zh": [
        "*小雨合上书，抬头看着你。* 外面的雪已经下了三天，北京的街道几乎空无一人。“我没想到你会来得这么早，”她微笑着"
        "说。“坐到炉子旁边来吧，我马上去泡茶。”桌子上放着几封旧信，用一条褪色的蓝丝带系着。她小心地拿起其中一封，"
        "开始大声朗读。",
        "王船长看着地图沉默了很久，才开口回答。船受到了严重的损坏，而离最近的港口还有好几天的航程。“只要大家都听从"
        "命令，我们一定能挺过去，”他终于说道。水手们互相看了看，但没有人反对。年轻的领航员李明俯身在仪器前，开始重"
        "新计算航线。风越来越大了。",
        "我们到达村子的时候，太阳已经落到树林后面去了。奶奶在院子门口迎接我们，马上把我们带进屋里，屋里飘着新鲜面包"
        "和覆盆子果酱的香味。“快进来，快进来，你们一定冻坏了吧，”她一遍又一遍地说。吃完晚饭后，我们在门廊上坐了很"
        "久，听着蟋蟀的叫声。爷爷给我们讲了他年轻时候的故事，还讲了他是怎样亲手盖起这座房子的。谁都不想去睡觉。",
    ],
    "id": [
        "*Sari menutup bukunya dan menatapmu.* Sudah tiga hari hujan turun di Bandung, dan jalanan hampir kosong. "
        '"Aku tidak menyangka kamu akan datang secepat ini," katanya sambil tersenyum tipis. "Duduklah di dekat '
        'jendela, aku akan membuatkan teh hangat." Di atas meja ada beberapa surat tua yang diikat dengan pita biru '
        "yang sudah pudar. Dia mengambil salah satunya dengan hati-hati dan mulai membacanya dengan suara keras.",
        "Kapten Santoso menatap peta itu lama sekali sebelum menjawab. Kapal itu rusak parah, dan pelabuhan terdekat "
        'masih beberapa hari perjalanan lagi. "Kita pasti bisa melewatinya kalau semua orang mengikuti perintah," '
        "katanya akhirnya. Para pelaut saling berpandangan, tetapi tidak ada yang membantah. Navigator muda bernama "
        "Budi membungkuk di atas peralatan dan mulai menghitung ulang arah pelayaran. Angin bertiup semakin kencang "
        "setiap menit.",
        "Ketika kami tiba di desa, matahari sudah terbenam di balik hutan. Nenek menyambut kami di depan pagar dan "
        "langsung mengajak kami masuk ke rumah yang harum oleh roti segar dan selai stroberi. \"Ayo masuk, kalian "
        'pasti kedinginan," katanya berulang kali. Setelah makan malam, kami duduk lama di beranda sambil '
        "mendengarkan suara jangkrik. Kakek bercerita tentang masa mudanya dan tentang bagaimana dia membangun rumah "
        "ini dengan tangannya sendiri. Tidak ada yang mau tidur lebih awal.",
    ],
    "hi": [
        "*प्रिया किताब बंद करती है और तुम्हारी ओर देखती है।* बाहर तीन दिन से बारिश हो रही है, और जयपुर की गलियाँ लगभग "
        'सुनसान हैं। "मुझे नहीं लगा था कि तुम इतनी जल्दी आ जाओगे," वह हल्की मुस्कान के साथ कहती है। "खिड़की के पास बैठ '
        'जाओ, मैं अभी चाय बनाती हूँ।" मेज़ पर कुछ पुरानी चिट्ठियाँ रखी हैं, जो एक फीके नीले रिबन से बँधी हुई हैं। वह '
        "उनमें से एक को सावधानी से उठाती है और ज़ोर से पढ़ना शुरू करती है।",
        "कप्तान शर्मा ने जवाब देने से पहले बहुत देर तक नक्शे को देखा। जहाज़ बुरी तरह क्षतिग्रस्त हो चुका था, और सबसे "
        'नज़दीकी बंदरगाह अभी भी कई दिनों की दूरी पर था। "अगर सब लोग आदेशों का पालन करें, तो हम ज़रूर बच जाएँगे," उसने '
        "आख़िरकार कहा। नाविकों ने एक-दूसरे की ओर देखा, लेकिन किसी ने विरोध नहीं किया। युवा नाविक अर्जुन यंत्रों पर झुक "
        "गया और रास्ते की फिर से गणना करने लगा। हवा हर पल और तेज़ होती जा रही थी।",
        "जब हम गाँव पहुँचे, तब तक सूरज जंगल के पीछे डूब चुका था। दादी ने दरवाज़े पर हमारा स्वागत किया और हमें सीधे घर "
        "के अंदर ले गईं, जहाँ ताज़ी रोटी और आम के अचार की खुशबू फैली हुई थी। \"आओ, आओ, तुम लोग तो ठंड से काँप रहे "
        'होगे," वह बार-बार कहती रहीं। रात के खाने के बाद हम देर तक बरामदे में बैठे रहे और झींगुरों की आवाज़ सुनते रहे। '
        "दादाजी ने अपनी जवानी के किस्से सुनाए और बताया कि उन्होंने यह घर अपने हाथों से कैसे बनाया था। कोई भी सोने नहीं "
        "जाना चाहता था।",
    ],
    "ar": [
        "*تغلق ليلى الكتاب وتنظر إليك.* منذ ثلاثة أيام والمطر يهطل على القاهرة، والشوارع شبه خالية. \"لم أتوقع أن "
        'تأتي مبكرًا هكذا"، تقول بابتسامة خفيفة. "اجلس بجانب النافذة، سأحضّر لك الشاي حالًا." على الطاولة توجد '
        "رسائل قديمة مربوطة بشريط أزرق باهت. تأخذ واحدة منها بحذر وتبدأ بقراءتها بصوت عالٍ.",
        "نظر القبطان سليم إلى الخريطة طويلًا قبل أن يجيب. كانت السفينة متضررة بشدة، وكان أقرب ميناء لا يزال على بعد "
        'أيام من الإبحار. "إذا أطاع الجميع الأوامر فسوف ننجو بالتأكيد"، قال أخيرًا. تبادل البحارة النظرات، لكن أحدًا '
        "لم يعترض. انحنى الملاح الشاب كريم فوق الأجهزة وبدأ يعيد حساب المسار. كانت الرياح تشتد مع كل دقيقة.",
        "عندما وصلنا إلى القرية، كانت الشمس قد غابت خلف الغابة. استقبلتنا جدتي عند البوابة وأخذتنا مباشرة إلى البيت "
        'الذي كانت تفوح منه رائحة الخبز الطازج ومربى التوت. "تفضلوا، تفضلوا، لا بد أنكم تشعرون بالبرد"، كانت تكرر '
        "ذلك مرارًا. بعد العشاء جلسنا طويلًا في الشرفة نستمع إلى صوت الصراصير. حكى لنا جدي قصصًا عن شبابه وعن كيف "
        "بنى هذا البيت بيديه. لم يرغب أحد في النوم مبكرًا.",
    ],
    "vi": [
        "*Lan gấp cuốn sách lại và nhìn bạn.* Trời đã mưa suốt ba ngày ở Hà Nội, và những con phố gần như vắng "
        'tanh. "Mình không nghĩ là bạn lại đến sớm như vậy", cô ấy nói với một nụ cười nhẹ. "Ngồi gần cửa sổ đi, '
        'mình pha trà ngay đây." Trên bàn có mấy lá thư cũ được buộc bằng một dải ruy băng xanh đã phai màu. Cô cẩn '
        "thận cầm một lá lên và bắt đầu đọc thành tiếng.",
        "Thuyền trưởng Minh nhìn tấm bản đồ rất lâu trước khi trả lời. Con tàu bị hư hại nặng, và cảng gần nhất vẫn "
        'còn cách vài ngày đi biển. "Nếu mọi người đều tuân theo mệnh lệnh, chúng ta nhất định sẽ vượt qua", cuối '
        "cùng ông nói. Các thủy thủ nhìn nhau, nhưng không ai phản đối. Hoa tiêu trẻ tên Tuấn cúi xuống các thiết "
        "bị và bắt đầu tính toán lại hải trình. Gió mỗi lúc một mạnh hơn.",
        "Khi chúng tôi đến làng, mặt trời đã lặn sau rừng cây. Bà đón chúng tôi ở cổng và dẫn ngay vào nhà, nơi "
        'thoang thoảng mùi bánh mì mới nướng và mứt dâu rừng. "Vào đi, vào đi, chắc các cháu lạnh lắm rồi", bà cứ '
        "nhắc đi nhắc lại. Sau bữa tối, chúng tôi ngồi rất lâu ngoài hiên nghe tiếng dế kêu. Ông kể cho chúng tôi "
        "nghe chuyện thời trẻ và chuyện ông đã tự tay dựng nên ngôi nhà này như thế nào. Không ai muốn đi ngủ sớm.",
    ],
}

#: Clean but tricky: foreign names, a short foreign exclamation, loanwords, emphasis actions.
TRICKY: list[tuple[str, str]] = [
    ("en", '*Yuki bows politely.* "Konnichiwa!" she says, then switches to careful English. "My name is Yuki '
     'Tanaka, and I came from Osaka to study at your university." She hands you a small box of sweets wrapped '
     'in red paper. "Bon appétit," she adds with a wink, "as my French teacher used to say." You notice that '
     "her suitcase is covered in stickers from Paris, Berlin and São Paulo."),
    ("pt", '*Giulia sorri.* "Ciao!" ela diz, rindo. Depois de tantos anos morando em Lisboa, ela ainda '
     "cumprimenta todo mundo em italiano. Nós caminhamos juntos até a livraria Bertrand, na rua Garrett, onde "
     "ela queria comprar um livro de receitas para a mãe. No caminho, paramos para comer pastéis de nata e "
     "conversar sobre a viagem que faremos no verão."),
    ("es", '*Pedro levanta su copa.* "¡Salud!" Todos en la mesa brindan por el cumpleaños de su abuela, que hoy '
     'cumple noventa años. Ella se ríe y dice que el secreto de una vida larga es bailar cada sábado. Después '
     "de la cena, los nietos sacan la guitarra y cantan boleros hasta la medianoche. Nadie quiere que la noche "
     "termine."),
    ("ja", "*健太は深呼吸をする。* 「OK、行こう！」彼はそう言って、ドアを開けた。外は思ったよりも寒くて、東京の空は灰色"
     "の雲に覆われていた。駅までの道を歩きながら、二人は昨日見た映画の話をした。電車の中はとても混んでいたが、"
     "彼女はずっと楽しそうに笑っていた。"),
    ("zh", "*林小姐笑了笑。* “OK，我们走吧！”她拿起外套，跟着我走出了咖啡馆。上海的晚上很热闹，街上到处都是灯光和行"
     "人。我们沿着外滩慢慢地走，一边看着江上的船，一边聊着小时候的事情。她说她最喜欢的地方是外婆家的小院子。"),
    ("ru", "*Мария улыбается.* «Окей, договорились!» Она быстро собирает вещи, и мы выходим из кафе на Невский "
     "проспект. Вечером город становится совсем другим: огни отражаются в воде каналов, а по мостам гуляют "
     "туристы. Мы долго идём вдоль Фонтанки и разговариваем о книгах, которые читали в детстве."),
]

#: Too short to judge, whatever the language: expect inconclusive (never fail).
SHORT: list[tuple[str, str]] = [
    ("en", "*nods*"),
    ("pt", "Olá! Tudo bem?"),
    ("es", "¡Hola, amigo!"),
    ("fr", "« Merci. »"),
    ("ja", "はい。"),
    ("zh", "好的。"),
    ("ru", "Да, конечно."),
    ("ar", "نعم."),
    ("ko", "네, 알겠어요."),
    ("de", "*lächelt* Ja."),
]
