// The conversation's tree without a model: versions made by addVersion are siblings, the active path
// switches between them and remembers what was active below each; a failed version goes and the
// earlier one comes back; the tree, the active choices and per-token candidates survive a JSON round
// trip; version 1 files (one path) still load, and files that are not conversations are refused with
// a reason. The store: ids, listing newest first, search, rename, delete and undo on a temporary folder.
#include <cmath>
#include <limits>

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtTest>

#include "conversation.h"
#include "conversation_store.h"

namespace {

ChatEntry user(const QString& text) {
    return {"user", text, {}, {}};
}

ChatEntry reply(const QString& text) {
    ChatEntry e{"assistant", text, {}, "eos"};
    TokenRecord t;
    t.id = 42;
    t.piece = text;
    t.p = 0.5f;
    t.position = 7;
    t.entropy = 1.25f;
    t.candidates = {{42, text.toStdString(), 0.5f, 0.6f}, {43, "other", 0.25f, 0.4f}};
    t.trace = {{"top_k", 49152, 40, {{42, 3.5f, 0.75f}, {43, 2.25f, 0.25f}}, "k = 40"},
               {"min_p", 40, 1, {{42, 3.5f, 1.0f}}, "p >= 0.05 x p_max", 0.5, 0.0375}};
    e.tokens.append(t);
    return e;
}

QStringList contents(const Conversation& c) {
    QStringList out;
    for (const ChatEntry& m : c.messages) out << m.content;
    return out;
}

}  // namespace

class TestConversationTree : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The samplers that follow llama.cpp survive a conversation file (a ban as null, JSON having no
    // infinity), and an empty order in a file falls back to the default instead of running no stage.
    void newSamplerSettingsRoundTrip() {
        wb::SamplingParams p;
        p.samplers = {"min_p", "xtc", "temperature"};
        p.logit_bias = {{7, -std::numeric_limits<float>::infinity()}, {9, 2.5f}};
        p.xtc_probability = 0.5f;
        p.xtc_threshold = 0.25f;
        p.top_n_sigma = 1.5f;
        p.mirostat = 2;
        p.mirostat_tau = 4.0f;
        p.mirostat_eta = 0.2f;
        p.dry_multiplier = 0.75f;
        p.dry_base = 2.0f;
        p.dry_allowed_length = 3;
        p.dry_penalty_last_n = -1;
        p.dry_sequence_breakers = {"\n", "::"};
        const QJsonObject json = QJsonDocument::fromJson(QJsonDocument(samplingToJson(p)).toJson()).object();
        const wb::SamplingParams back = samplingFromJson(json);
        QCOMPARE(back.samplers, p.samplers);
        QCOMPARE(back.logit_bias.size(), size_t(2));
        QCOMPARE(back.logit_bias[0].token, 7);
        QVERIFY(std::isinf(back.logit_bias[0].bias) && back.logit_bias[0].bias < 0);
        QCOMPARE(back.logit_bias[1].bias, 2.5f);
        QCOMPARE(back.xtc_probability, 0.5f);
        QCOMPARE(back.xtc_threshold, 0.25f);
        QCOMPARE(back.top_n_sigma, 1.5f);
        QCOMPARE(back.mirostat, 2);
        QCOMPARE(back.mirostat_tau, 4.0f);
        QCOMPARE(back.mirostat_eta, 0.2f);
        QCOMPARE(back.dry_multiplier, 0.75f);
        QCOMPARE(back.dry_base, 2.0f);
        QCOMPARE(back.dry_allowed_length, 3);
        QCOMPARE(back.dry_penalty_last_n, -1);
        QCOMPARE(back.dry_sequence_breakers, p.dry_sequence_breakers);
        QJsonObject empty = json;
        empty.insert("samplers", "");
        QCOMPARE(samplingFromJson(empty).samplers, wb::SamplingParams{}.samplers);
    }

    void versionsAreSiblingsAndThePathSwitches() {
        Conversation c;
        c.append(user("q1"));
        c.append(reply("a1"));
        c.append(user("q2"));
        c.append(reply("a2"));
        QCOMPARE(c.versionCount(1), 1);
        // Regenerate the first reply: a sibling, and the path ends with it.
        c.addVersion(1, reply("a1b"));
        QCOMPARE(contents(c), QStringList({"q1", "a1b"}));
        QCOMPARE(c.versionCount(1), 2);
        QCOMPARE(c.versionIndex(1), 1);
        QCOMPARE(c.totalMessages(), 5);
        // Back to the first version: what followed it comes back.
        QVERIFY(c.selectVersion(1, 0));
        QCOMPARE(contents(c), QStringList({"q1", "a1", "q2", "a2"}));
        QCOMPARE(c.messages[1].tokens.size(), 1);
        QCOMPARE(c.messages[1].tokens[0].candidates.size(), size_t(2));
        // Edit the first user message: a sibling at the top; switching back restores the whole branch
        // with the version of the reply that was active in it.
        c.addVersion(0, user("q1 edited"));
        c.append(reply("e1"));
        QCOMPARE(contents(c), QStringList({"q1 edited", "e1"}));
        QCOMPARE(c.versionCount(0), 2);
        QVERIFY(c.selectVersion(1, 0));  // e1 has no sibling: version 0 is itself
        QCOMPARE(contents(c), QStringList({"q1 edited", "e1"}));
        QVERIFY(c.selectVersion(0, 0));
        QCOMPARE(contents(c), QStringList({"q1", "a1", "q2", "a2"}));
        QVERIFY(c.selectVersion(1, 1));
        QCOMPARE(contents(c), QStringList({"q1", "a1b"}));
        QVERIFY(c.selectVersion(0, 1));
        QVERIFY(c.selectVersion(0, 0));
        QCOMPARE(contents(c), QStringList({"q1", "a1b"}));  // the choice below was kept
        QVERIFY(!c.selectVersion(0, 2));
        QVERIFY(!c.selectVersion(5, 0));
        QCOMPARE(c.totalMessages(), 7);
    }

    void aFailedVersionGivesWayToTheEarlierOne() {
        Conversation c;
        c.append(user("q"));
        c.append(reply("a"));
        c.addVersion(1, {"assistant", "", {}, {}});
        QCOMPARE(c.versionCount(1), 2);
        c.removeLast();
        QCOMPARE(contents(c), QStringList({"q", "a"}));
        QCOMPARE(c.versionCount(1), 1);
        c.removeLast();
        c.removeLast();
        QVERIFY(c.isEmpty());
        QCOMPARE(c.totalMessages(), 0);
    }

    // Views and older code append to `messages` directly; the tree takes them in.
    void messagesAppendedDirectlyJoinTheTree() {
        Conversation c;
        c.messages.append(user("q"));
        c.messages.append(reply("a"));
        c.addVersion(1, reply("b"));
        QCOMPARE(c.versionCount(1), 2);
        QVERIFY(c.selectVersion(1, 0));
        QCOMPARE(contents(c), QStringList({"q", "a"}));
    }

    void theTreeSurvivesJson() {
        Conversation c;
        c.title = "My chat";
        c.systemPrompt = "Be brief.";
        c.modelName = "SmolLM2";
        c.created = QDateTime::currentDateTimeUtc().addSecs(-60);
        c.updated = QDateTime::currentDateTimeUtc();
        c.sampling.temperature = 0.3f;
        c.sampling.seed = 18446744073709551557ull;
        c.append(user("q1"));
        c.append(reply("a1"));
        c.append(user("q2"));
        c.append(reply("a2"));
        c.addVersion(1, reply("a1b"));
        c.addVersion(0, user("q1 edited"));
        c.append(reply("e1"));
        QVERIFY(c.selectVersion(0, 0));
        QVERIFY(c.selectVersion(1, 0));  // active: q1 a1 q2 a2, with a1b and the edit as siblings

        const QJsonObject json = c.toJson();
        QCOMPARE(json.value("version").toInt(), 2);
        QString error;
        std::optional<Conversation> back = Conversation::fromJson(json, &error);
        QVERIFY2(back, qPrintable(error));
        QCOMPARE(contents(*back), QStringList({"q1", "a1", "q2", "a2"}));
        QCOMPARE(back->title, QString("My chat"));
        QCOMPARE(back->systemPrompt, QString("Be brief."));
        QCOMPARE(back->modelName, QString("SmolLM2"));
        QCOMPARE(back->created.toSecsSinceEpoch(), c.created.toSecsSinceEpoch());
        QCOMPARE(back->sampling.seed, c.sampling.seed);
        QCOMPARE(back->totalMessages(), 7);
        QCOMPARE(back->versionCount(0), 2);
        QCOMPARE(back->versionCount(1), 2);
        QCOMPARE(back->versionIndex(1), 0);
        const TokenRecord& t = back->messages[1].tokens[0];
        QCOMPARE(t.id, 42);
        QCOMPARE(t.position, 7);
        QCOMPARE(t.entropy, 1.25f);
        QCOMPARE(t.candidates.size(), size_t(2));
        QCOMPARE(t.candidates[1].id, 43);
        QCOMPARE(QString::fromStdString(t.candidates[1].piece), QString("other"));
        QCOMPARE(t.candidates[1].p_final, 0.4f);
        // The sampler trace comes back too: the inspector's stage table of a reopened reply.
        QCOMPARE(t.trace.size(), size_t(2));
        QCOMPARE(QString::fromStdString(t.trace[1].stage), QString("min_p"));
        QCOMPARE(t.trace[1].n_before, size_t(40));
        QCOMPARE(t.trace[1].n_after, size_t(1));
        QCOMPARE(QString::fromStdString(t.trace[1].detail), QString("p >= 0.05 x p_max"));
        // The cut-offs the stages applied, and none (NaN, null in the file) for top-k's p cut-off.
        QCOMPARE(t.trace[1].threshold, 0.5);
        QCOMPARE(t.trace[1].p_cutoff, 0.0375);
        QVERIFY(std::isnan(t.trace[0].p_cutoff));
        QCOMPARE(t.trace[0].n_before, size_t(49152));
        QCOMPARE(t.trace[0].top_after.size(), size_t(2));
        QCOMPARE(t.trace[0].top_after[1].id, 43);
        QCOMPARE(t.trace[0].top_after[1].logit, 2.25f);
        QCOMPARE(t.trace[0].top_after[1].p, 0.25f);
        QVERIFY(back->selectVersion(0, 1));
        QCOMPARE(contents(*back), QStringList({"q1 edited", "e1"}));
        QVERIFY(back->selectVersion(0, 0));
        QVERIFY(back->selectVersion(1, 1));
        QCOMPARE(contents(*back), QStringList({"q1", "a1b"}));
    }

    // A remote server's token without logprobs has no p (NaN), and its alternatives no p_final: null
    // in the file, NaN again when read (not 0, which the chat would colour as an impossible token);
    // known values stay as they were, through the JSON text a file holds.
    void unknownProbabilitiesSurviveJson() {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        Conversation c;
        c.append(user("q"));
        ChatEntry r = reply("a");
        r.tokens[0].p = nan;
        r.tokens[0].candidates = {{42, "a", 0.5f, nan}, {43, "b", nan, 0.25f}};
        c.append(r);
        const QByteArray text = QJsonDocument(c.toJson()).toJson();
        QString error;
        std::optional<Conversation> back = Conversation::fromJson(QJsonDocument::fromJson(text).object(), &error);
        QVERIFY2(back, qPrintable(error));
        const TokenRecord& t = back->messages[1].tokens[0];
        QVERIFY2(std::isnan(t.p), qPrintable(QString::number(t.p)));
        QCOMPARE(t.candidates.size(), size_t(2));
        QCOMPARE(t.candidates[0].p_raw, 0.5f);
        QVERIFY(std::isnan(t.candidates[0].p_final));
        QVERIFY(std::isnan(t.candidates[1].p_raw));
        QCOMPARE(t.candidates[1].p_final, 0.25f);
        // A known p of 0 stays 0.
        Conversation z;
        z.append(user("q"));
        ChatEntry zr = reply("a");
        zr.tokens[0].p = 0.0f;
        z.append(zr);
        std::optional<Conversation> zb = Conversation::fromJson(QJsonDocument::fromJson(QJsonDocument(z.toJson()).toJson()).object(), &error);
        QVERIFY(zb);
        QCOMPARE(zb->messages[1].tokens[0].p, 0.0f);
    }

    void versionOneFilesStillLoad() {
        const QByteArray v1 = R"({"format":"whitebox-conversation","version":1,"model":"M","system_prompt":"S",
            "sampling":{"temperature":0.5},"messages":[{"role":"user","content":"hi"},
            {"role":"assistant","content":"hello","stop_reason":"eos","tokens":[{"id":5,"piece":"hello","p":0.9,"pos":3}]}]})";
        QString error;
        std::optional<Conversation> c = Conversation::fromJson(QJsonDocument::fromJson(v1).object(), &error);
        QVERIFY2(c, qPrintable(error));
        QCOMPARE(contents(*c), QStringList({"hi", "hello"}));
        QCOMPARE(c->messages[1].tokens[0].id, 5);
        QCOMPARE(c->displayTitle(), QString("hi"));
        QCOMPARE(c->versionCount(1), 1);
        // And it branches like any other.
        c->addVersion(1, reply("again"));
        QCOMPARE(c->versionCount(1), 2);
    }

    void badFilesAreRefusedWithAReason() {
        QString error;
        QVERIFY(!Conversation::fromJson(QJsonObject{{"format", "other"}}, &error));
        QVERIFY(error.contains("not a WhiteBox conversation"));
        QVERIFY(!Conversation::fromJson(QJsonObject{{"format", "whitebox-conversation"}, {"version", 99}}, &error));
        QVERIFY(error.contains("newer"));
        const QJsonArray loop{QJsonObject{{"role", "user"}, {"content", "a"}, {"parent", 0}}};
        QVERIFY(!Conversation::fromJson(QJsonObject{{"format", "whitebox-conversation"}, {"version", 2}, {"nodes", loop}}, &error));
        QVERIFY(error.contains("parent"));
        const QJsonArray role{QJsonObject{{"role", "tool"}, {"content", "a"}, {"parent", -1}}};
        QVERIFY(!Conversation::fromJson(QJsonObject{{"format", "whitebox-conversation"}, {"version", 2}, {"nodes", role}}, &error));
        QVERIFY(error.contains("tool"));
    }

    void titleComesFromTheFirstMessageUnlessRenamed() {
        Conversation c;
        QCOMPARE(c.displayTitle(), QString("New chat"));
        c.append(user("  What is the capital of France?\nAnd of Spain?"));
        QCOMPARE(c.displayTitle(), QString("What is the capital of France?"));
        c.messages[0].content = QString(100, 'x');
        QCOMPARE(c.displayTitle().size(), 60);
        c.title = "Geography";
        QCOMPARE(c.displayTitle(), QString("Geography"));
    }

    void storeListsSearchesRenamesDeletesAndUndoes() {
        QTemporaryDir dir;
        ConversationStore store(dir.filePath("conversations"));
        QVERIFY(store.conversations().isEmpty());
        const QStringList ids = {store.newId(), store.newId(), store.newId()};
        QCOMPARE(QSet<QString>(ids.begin(), ids.end()).size(), 3);
        const QStringList questions = {"Tell me about cats", "Tell me about dogs", "Explain quantum physics"};
        for (int i = 0; i < 3; ++i) {
            Conversation c;
            c.append(user(questions[i]));
            c.append(reply("answer " + QString::number(i)));
            c.updated = QDateTime::currentDateTimeUtc().addSecs(i);
            QString error;
            QVERIFY2(store.save(ids[i], c, &error), qPrintable(error));
        }
        QCOMPARE(store.conversations().size(), 3);
        QCOMPARE(store.conversations().first().id, ids[2]);  // newest first
        QCOMPARE(store.search("tell ME").size(), 2);
        QCOMPARE(store.search("about dogs").size(), 1);
        QCOMPARE(store.search("answer 0").first().id, ids[0]);  // the messages are searched too
        QCOMPARE(store.search("").size(), 3);

        QString error;
        QVERIFY(store.rename(ids[0], "Felines", &error));
        ConversationStore reread(dir.filePath("conversations"));
        QCOMPARE(reread.conversations().at(reread.indexOf(ids[0])).title, QString("Felines"));

        QVERIFY(store.remove(ids[1], &error));
        QVERIFY(!QFileInfo::exists(store.pathOf(ids[1])));
        QCOMPARE(store.conversations().size(), 2);
        QVERIFY(store.canUndoRemove());
        QCOMPARE(store.lastRemovedTitle(), QString("Tell me about dogs"));
        QCOMPARE(store.undoRemove(&error), ids[1]);
        QVERIFY(QFileInfo::exists(store.pathOf(ids[1])));
        QCOMPARE(store.conversations().size(), 3);
        QVERIFY(!store.canUndoRemove());
        QVERIFY(!store.remove("no-such-id", &error));
        QVERIFY(error.contains("no-such-id"));

        // A file that is not a conversation is listed as unreadable, not shown.
        QFile junk(dir.filePath("conversations/junk.json"));
        QVERIFY(junk.open(QIODevice::WriteOnly));
        junk.write("{not json");
        junk.close();
        store.rescan();
        QCOMPARE(store.conversations().size(), 3);
        QCOMPARE(store.unreadable().size(), 1);
        QVERIFY(store.unreadable().first().startsWith("junk.json"));
    }
};

QTEST_GUILESS_MAIN(TestConversationTree)
#include "test_conversation_tree.moc"
