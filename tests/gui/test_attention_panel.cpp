// Attention panel: given attention events, the colour map holds the probabilities at the right
// cells (query rows, key columns) in each mode, the axes carry the token text, the map grows a row per
// generated token, hovering names query, key and probability, and PNG/CSV export write the values; a
// sliding-window layer shades the keys outside the window the engine recorded; the memory budget drops
// the oldest rows and the panel shows the memory the rows take. A streamed refresh colours only the
// new rows, and the map it builds row by row is the map a full rebuild draws, value for value and
// pixel for pixel, through budget drops, a rising colour scale, layer and view switches, a new prompt
// that reuses a prefix, and a new chat.
#include <QActionGroup>
#include <QCheckBox>
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include <qcustomplot.h>

#include "attention_map_image.h"
#include "attention_panel.h"
#include "attention_store.h"
#include "gui_test_support.h"
#include "theme.h"

namespace {

// Distinct values per head, query and key: easy to check at any cell.
float value(int head, int query, int key) {
    return float(head + 1) * 0.1f + float(query) * 0.01f + float(key) * 0.001f;
}

// Values whose top (0.9, row 1) is reached at once: later rows do not move the colour scale.
float flat(int head, int query, int key) {
    if (query == 1 && key == 0) return 0.9f;
    return 0.5f * float(key + 1 + head) / float(query + 4);
}

QStringList pieces(int n, int from = 0) {
    QStringList p;
    for (int i = from; i < from + n; ++i) p << QString("t%1").arg(i);
    return p;
}

PromptInfo prompt(const QStringList& pieces) {
    PromptInfo info;
    info.requestId = 1;
    info.pieces = pieces;
    for (int i = 0; i < pieces.size(); ++i) info.ids << i;
    return info;
}

}  // namespace

class TestAttentionPanel : public QObject {
    Q_OBJECT

    // A fresh panel on the same store draws every row once: the panel built row by row must match it
    // in every map (cell values, NaN where masked, the out-of-window cells, the colour range, pixels).
    static void expectSameAsFullRebuild(const AttentionPanel& panel, AttentionStore& store) {
        AttentionPanel fresh(&store);
        fresh.setMode(panel.mode());
        fresh.setLayer(panel.layer());
        fresh.setHead(panel.head());
        fresh.refreshNow();
        const int maps = panel.mode() == AttentionPanel::Mode::AllHeads ? store.headCount() : 1;
        for (int i = 0; i < maps; ++i) {
            const int index = panel.mode() == AttentionPanel::Mode::AllHeads ? i : -1;
            const AttentionMapImage* got = panel.colorMap(index);
            const AttentionMapImage* want = fresh.colorMap(index);
            QVERIFY(got && want);
            QCOMPARE(got->tokenCount(), want->tokenCount());
            QCOMPARE(got->dataRange().upper, want->dataRange().upper);
            for (int q = 0; q < want->tokenCount(); ++q)
                for (int k = 0; k < want->tokenCount(); ++k) {
                    const double a = got->cell(k, q), b = want->cell(k, q);
                    if (!(std::isnan(a) && std::isnan(b)) && a != b)
                        QFAIL(qPrintable(QString("map %1, cell (key %2, query %3): %4, a full rebuild has %5").arg(i).arg(k).arg(q).arg(a).arg(b)));
                    QCOMPARE(got->outsideWindow(k, q), want->outsideWindow(k, q));
                }
            const QImage a = got->image(), b = want->image();
            QCOMPARE(a.size(), b.size());
            for (int q = 0; q < b.height(); ++q)
                for (int k = 0; k < b.width(); ++k)
                    if (a.pixel(k, q) != b.pixel(k, q))
                        QFAIL(qPrintable(QString("map %1, pixel (key %2, query %3): %4, a full rebuild has %5")
                                             .arg(i).arg(k).arg(q).arg(a.pixel(k, q), 0, 16).arg(b.pixel(k, q), 0, 16)));
        }
    }

    // One generated token: its text, then its rows for layers 1 (window 4) and 2.
    static void streamToken(AttentionStore& store, int position, float (*f)(int, int, int)) {
        store.handleToken(position, QString("t%1").arg(position));
        wb::AttentionEvent windowed = wb_gui_test::attentionEvent(1, 3, position, 1, f);
        windowed.window = 4;
        store.addEvents({windowed, wb_gui_test::attentionEvent(2, 3, position, 1, f)});
    }

    void feedPrefill(AttentionStore& store) {
        store.setModelShape(4, 3);
        store.handlePrompt(prompt({"<s>", "Hello", " world"}));
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 0, 3, value)});
    }

private Q_SLOTS:
    void initTestCase() { wb_gui_test::isolateSettings("test_attention_panel"); }

    void singleHeadCellsHoldTheProbabilities() {
        AttentionStore store;
        AttentionPanel panel(&store);
        feedPrefill(store);
        panel.setLayer(2);
        panel.setHead(1);
        panel.refreshNow();
        AttentionMapImage* d = panel.colorMap();
        QCOMPARE(d->tokenCount(), 3);
        QCOMPARE(d->image().size(), QSize(3, 3));
        // cell(key, query)
        QCOMPARE(d->cell(0, 0), double(value(1, 0, 0)));
        QCOMPARE(d->cell(1, 2), double(value(1, 2, 1)));
        QCOMPARE(d->cell(2, 2), double(value(1, 2, 2)));
        QVERIFY(std::isnan(d->cell(2, 0)));  // a future key is masked
        QCOMPARE(panel.valueAt(2, 1, 1), double(value(1, 2, 1)));
    }

    void meanModeAveragesHeads() {
        AttentionStore store;
        AttentionPanel panel(&store);
        feedPrefill(store);
        panel.setLayer(2);
        panel.setMode(AttentionPanel::Mode::MeanOverHeads);
        panel.refreshNow();
        const double mean = (value(0, 2, 1) + value(1, 2, 1) + value(2, 2, 1)) / 3.0;
        QVERIFY(qAbs(panel.colorMap()->cell(1, 2) - mean) < 1e-6);
    }

    void gridModeHasAMapPerHead() {
        AttentionStore store;
        AttentionPanel panel(&store);
        feedPrefill(store);
        panel.setLayer(2);
        panel.setMode(AttentionPanel::Mode::AllHeads);
        panel.refreshNow();
        QVERIFY(panel.colorMap(0) && panel.colorMap(2));
        QCOMPARE(panel.colorMap(2)->cell(0, 1), double(value(2, 1, 0)));
        QCOMPARE(panel.colorMap(0)->cell(1, 1), double(value(0, 1, 1)));
        QVERIFY(panel.describeCell(1, 0, 2).contains("head 2"));
    }

    void axesCarryTokenText() {
        AttentionStore store;
        AttentionPanel panel(&store);
        panel.resize(800, 700);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        feedPrefill(store);
        panel.setLayer(2);
        panel.refreshNow();
        panel.plot()->replot();
        QCOMPARE(panel.xTickLabel(1), QString("Hello"));
        QCOMPARE(panel.yTickLabel(2), QString("·world"));  // a leading space is made visible
        QCOMPARE(panel.xTickLabel(0), QString("<s>"));
    }

    void growsOneRowPerGeneratedToken() {
        AttentionStore store;
        AttentionPanel panel(&store);
        feedPrefill(store);
        panel.setLayer(2);
        store.handleToken(3, "!");
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 3, 1, value)});
        panel.refreshNow();
        AttentionMapImage* d = panel.colorMap();
        QCOMPARE(d->tokenCount(), 4);
        QCOMPARE(d->cell(3, 3), double(value(0, 3, 3)));
        QCOMPARE(d->cell(0, 3), double(value(0, 3, 0)));
    }

    void hoverDescribesQueryKeyAndProbability() {
        AttentionStore store;
        AttentionPanel panel(&store);
        feedPrefill(store);
        panel.setLayer(2);
        panel.refreshNow();
        const QString text = panel.describeCell(2, 1);
        QVERIFY2(text.contains("query 2") && text.contains("world") && text.contains("key 1") && text.contains("Hello"), qPrintable(text));
        QVERIFY2(text.contains(QString::number(value(0, 2, 1), 'f', 4)), qPrintable(text));
        QVERIFY(panel.describeCell(0, 2).contains("masked"));
        QVERIFY(panel.describeCell(5, 0).isEmpty());
    }

    // A new prompt that shares a prefix keeps the rows of that prefix and drops the rest.
    void promptReuseKeepsPrefixRows() {
        AttentionStore store;
        feedPrefill(store);
        PromptInfo next = prompt({"<s>", "Hello", " there", "!"});
        next.reused = 2;
        store.handlePrompt(next);
        QVERIFY(store.row(2, 0, 1) != nullptr);
        QVERIFY(store.row(2, 0, 2) == nullptr);
        QCOMPARE(store.tokenCount(), 4);
    }

    // After a context shift the engine's positions are the cache's: a row arriving then is stored at its
    // token's conversation position, every recorded value at its key's conversation position and the
    // dropped keys 0, so the labels, the token inspector's lookups and the rows agree; two shifts stack;
    // the next turn's prompt, which goes on from the shifted cache, keeps them; one that goes back
    // before the dropped tokens starts over in its own positions.
    void rowsAfterAShiftSitAtTheirConversationPositions() {
        AttentionStore store;
        store.setModelShape(4, 3);
        store.handlePrompt(prompt(pieces(8)));
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 0, 8, value)});
        for (int p = 8; p < 10; ++p) store.handleToken(p, QString("t%1").arg(p));
        // Keep 2, drop 3: conversation positions 5.. are now cache positions 2..
        store.setCut({wb::ContextPolicy::SHIFT, 2, 3});
        // The token at conversation position 10 is drawn from cache row 6 (conversation 9), keys 0..6.
        store.handleToken(10, QStringLiteral("t10"));
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 6, 1, value)});
        const std::vector<float>* row = store.row(2, 1, 9);
        QVERIFY(row);
        QCOMPARE(int(row->size()), 10);
        for (int k = 0; k < 10; ++k) {
            const int cacheKey = k < 2 ? k : k - 3;
            QCOMPARE((*row)[size_t(k)], k >= 2 && k < 5 ? 0.0f : value(1, 6, cacheKey));
        }
        // The rows before the shift are as they were recorded.
        QCOMPARE(int(store.row(2, 1, 7)->size()), 8);
        QCOMPARE((*store.row(2, 1, 7))[3], value(1, 7, 3));
        // A second shift (keep 2, drop 2) in the cache's new positions: cache 2.. were conversation 7..
        store.setCut({wb::ContextPolicy::SHIFT, 2, 2});
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 5, 1, value)});  // cache row 5 = conversation 10
        row = store.row(2, 0, 10);
        QVERIFY(row);
        QCOMPARE(int(row->size()), 11);
        QCOMPARE((*row)[1], value(0, 5, 1));
        QCOMPARE((*row)[6], 0.0f);
        QCOMPARE((*row)[7], value(0, 5, 2));
        QCOMPARE((*row)[10], value(0, 5, 5));
        // The next turn: the whole conversation (13 tokens) goes on from the shifted cache, whose
        // positions stay moved: its prompt's last token (conversation 12) is cache position 7.
        PromptInfo next = prompt(pieces(13));
        next.reused = 11;
        next.shiftKeep = 2;  // the engine's mapping (Session::reuse_prefix): keep 2, 3 + 2 dropped
        next.shiftDropped = 5;
        store.handlePrompt(next);
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 6, 2, value)});
        QVERIFY(store.row(2, 0, 12));
        QCOMPARE(int(store.row(2, 0, 12)->size()), 13);
        QCOMPARE((*store.row(2, 0, 12))[12], value(0, 7, 7));
        // A prompt that goes back into the dropped run is recomputed from the kept prefix (as a trim's
        // is): rows after it are stored where the engine says.
        next = prompt(pieces(4));
        next.reused = 3;
        store.handlePrompt(next);
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 0, 4, value)});
        QCOMPARE(int(store.row(2, 0, 3)->size()), 4);
        QCOMPARE((*store.row(2, 0, 3))[2], value(0, 3, 2));
    }

    // The store takes the shift mapping from the engine's PromptInfo, never from the cuts it saw: at
    // reused == keep + dropped the session resets its mapping (Session::keep_history) and so does the
    // store; after a replay reset the session (no cut seen) the prompt says none; a shift the store
    // never saw (a request not shown) is applied when the engine reports it.
    void theShiftMappingIsTheEnginesAtEachPrompt() {
        AttentionStore store;
        store.setModelShape(4, 3);
        store.handlePrompt(prompt(pieces(8)));
        store.setCut({wb::ContextPolicy::SHIFT, 2, 3});  // keep 2, drop 3
        // The boundary: the prompt reuses exactly keep + dropped = 5 history tokens; the engine keeps
        // cache 0..1 only and says there is no mapping, so cache row 6 is conversation row 6.
        PromptInfo next = prompt(pieces(7));
        next.reused = 5;
        store.handlePrompt(next);
        QCOMPARE(store.conversationPosition(6), 6);
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 5, 2, value)});
        QCOMPARE(int(store.row(2, 0, 6)->size()), 7);
        QCOMPARE((*store.row(2, 0, 6))[4], value(0, 6, 4));

        // The mapping kept: one position past the boundary.
        store.setCut({wb::ContextPolicy::SHIFT, 2, 3});
        next = prompt(pieces(9));
        next.reused = 6;
        next.shiftKeep = 2;
        next.shiftDropped = 3;
        store.handlePrompt(next);
        QCOMPARE(store.conversationPosition(5), 8);
        QCOMPARE(store.conversationPosition(1), 1);

        // A replay reset the session (the store saw no cut): the prompt says nothing is reused or shifted.
        next = prompt(pieces(9));
        next.reused = 0;
        store.handlePrompt(next);
        QCOMPARE(store.conversationPosition(5), 5);
        QVERIFY(!store.row(2, 0, 6));

        // A shift made while another request ran (not shown, so no cut reached the store).
        next = prompt(pieces(12));
        next.reused = 10;
        next.shiftKeep = 1;
        next.shiftDropped = 4;
        store.handlePrompt(next);
        QCOMPARE(store.conversationPosition(1), 5);
        QCOMPARE(store.conversationPosition(0), 0);
    }

    // The text under the map gives the last cut's position and what the cuts in force keep out of the
    // context, the last one's share apart: shifts in force (the engine's count at the prompt, then the cuts since), and
    // every trim of the conversation; a prompt with no shift in force and a new conversation have none.
    void cutTextGivesTheLastPositionAndTheTotal() {
        AttentionStore store;
        store.setModelShape(4, 3);
        AttentionPanel panel(&store);
        store.handlePrompt(prompt(pieces(12)));
        QVERIFY(panel.cutText().isEmpty());
        store.setCut({wb::ContextPolicy::SHIFT, 2, 3});
        QCOMPARE(panel.cutText(), QString("context shifted at position 2: 3 tokens dropped"));
        store.setCut({wb::ContextPolicy::SHIFT, 2, 4});
        QCOMPARE(panel.cutText(), QString("context shifted at position 2: 7 tokens out of the context now, 4 dropped by the last shift"));
        // The next prompt carries the engine's count of every shift behind its cache (here 9: one the
        // store never saw), and a cut during its reply adds to it.
        PromptInfo next = prompt(pieces(20));
        next.reused = 15;
        next.shiftKeep = 2;
        next.shiftDropped = 9;
        store.handlePrompt(next);
        store.setCut({wb::ContextPolicy::SHIFT, 2, 5});
        QCOMPARE(panel.cutText(), QString("context shifted at position 2: 14 tokens out of the context now, 5 dropped by the last shift"));
        // A prompt that goes back before the dropped run: the engine recomputes it and maps nothing,
        // so no shift is in force and none is marked (cut().dropped, which an export's refusal reads, is 0).
        next = prompt(pieces(6));
        next.reused = 2;
        store.handlePrompt(next);
        QCOMPARE(store.cut().dropped, 0);
        QVERIFY(panel.cutText().isEmpty());
        store.setCut({wb::ContextPolicy::SHIFT, 2, 3});
        store.clear();
        QVERIFY(panel.cutText().isEmpty());
        store.setCut({wb::ContextPolicy::TRIM, 6, 20});
        QCOMPARE(panel.cutText(), QString("old turns trimmed at position 6: 20 tokens dropped"));
        store.setCut({wb::ContextPolicy::TRIM, 6, 11});
        QCOMPARE(panel.cutText(), QString("old turns trimmed at position 6: 31 tokens out of the context now, 11 dropped by the last trim"));
        // The next prompt carries the worker's count of the trims in force, which holds those cuts (not
        // added again); one that sends the whole conversation (an edit before the first message still
        // sent, another policy) has none in force, and a trim after it counts from nothing.
        PromptInfo trimmedPrompt = prompt(pieces(10));
        trimmedPrompt.trimDropped = 31;
        store.handlePrompt(trimmedPrompt);
        QCOMPARE(panel.cutText(), QString("old turns trimmed at position 6: 31 tokens out of the context now, 11 dropped by the last trim"));
        trimmedPrompt.trimDropped = 0;
        store.handlePrompt(trimmedPrompt);
        QCOMPARE(store.cut().dropped, 0);
        QVERIFY(panel.cutText().isEmpty());
        store.setCut({wb::ContextPolicy::TRIM, 6, 8});
        QCOMPARE(panel.cutText(), QString("old turns trimmed at position 6: 8 tokens dropped"));
        store.clear();
        store.setCut({wb::ContextPolicy::SHIFT, 4, 1});
        QCOMPARE(panel.cutText(), QString("context shifted at position 4: 1 token dropped"));
    }

    void captureFollowsTheSelectedLayer() {
        AttentionStore store;
        store.setModelShape(4, 3);
        AttentionPanel panel(&store);
        QSignalSpy spy(&panel, &AttentionPanel::captureLayersChanged);
        panel.setLayer(3);
        QCOMPARE(spy.last().at(0).value<QVector<int>>(), QVector<int>{3});
        QCheckBox* all = panel.findChild<QCheckBox*>();
        all->setChecked(true);
        QVERIFY(spy.last().at(0).value<QVector<int>>().isEmpty());
    }

    // The window comes with the rows (AttentionEvent::window); the out-of-window colour covers exactly
    // the keys the window masked (query - key >= window), in single-head and grid mode, and the hover
    // says so.
    void slidingWindowLayerShadesOutOfWindowKeys() {
        AttentionStore store;
        AttentionPanel panel(&store);
        store.setModelShape(4, 3);
        store.handlePrompt(prompt({"a", "b", "c", "d", "e", "f"}));
        wb::AttentionEvent e = wb_gui_test::attentionEvent(1, 3, 0, 6, [](int, int q, int k) { return q - k < 2 ? 0.5f : 0.0f; });
        e.window = 2;
        store.addEvents({e});
        store.addEvents({wb_gui_test::attentionEvent(3, 3, 0, 6, value)});  // a global layer: no window
        QCOMPARE(store.window(1), 2);
        QCOMPARE(store.window(3), 0);
        panel.setLayer(1);
        for (AttentionPanel::Mode mode : {AttentionPanel::Mode::SingleHead, AttentionPanel::Mode::AllHeads}) {
            panel.setMode(mode);
            panel.refreshNow();
            AttentionMapImage* map = panel.colorMap(mode == AttentionPanel::Mode::AllHeads ? 2 : -1);
            QVERIFY(map);
            const QImage image = map->image();
            const QRgb shade = Theme::color(Theme::Role::OutOfWindowCell).rgba();
            for (int q = 0; q < 6; ++q)
                for (int k = 0; k < 6; ++k) {
                    const bool outside = k <= q && q - k >= 2;
                    QCOMPARE(map->outsideWindow(k, q), outside);
                    QCOMPARE(image.pixel(k, q) == shade, outside);
                }
        }
        panel.setMode(AttentionPanel::Mode::SingleHead);
        panel.refreshNow();
        QVERIFY(panel.describeCell(5, 1).contains("outside the sliding window of 2 keys"));
        QVERIFY(panel.describeCell(5, 4).contains("p = 0.5000"));
        panel.setLayer(3);
        panel.refreshNow();
        const QImage global = panel.colorMap()->image();
        for (int q = 0; q < 6; ++q)
            for (int k = 0; k < 6; ++k) {
                QVERIFY(!panel.colorMap()->outsideWindow(k, q));
                QVERIFY(global.pixel(k, q) != Theme::color(Theme::Role::OutOfWindowCell).rgba());
            }
    }

    // Past the budget the oldest rows go (every layer and head at the lowest positions) and the
    // accounting never exceeds it; a smaller budget from the menu drops rows at once; the label shows it.
    void budgetDropsTheOldestRows() {
        AttentionStore store;
        AttentionPanel panel(&store);
        store.setModelShape(2, 3);
        QStringList pieces;
        for (int i = 0; i < 64; ++i) pieces << QString::number(i);
        store.handlePrompt(prompt(pieces));
        store.addEvents({wb_gui_test::attentionEvent(0, 3, 0, 64, value), wb_gui_test::attentionEvent(1, 3, 0, 64, value)});
        const qint64 all = store.bytesUsed();
        // 2 layers x 3 heads x (1 + ... + 64) floats and more (slots, allocation headers).
        QVERIFY(all >= qint64(2 * 3 * (64 * 65 / 2) * sizeof(float)));
        QCOMPARE(store.droppedBelow(), 0);
        QVERIFY(panel.memoryLabel()->text().contains("of 256 MiB"));

        store.setBudgetBytes(all / 2);
        QVERIFY(store.bytesUsed() <= all / 2);
        const int dropped = store.droppedBelow();
        QVERIFY(dropped > 0);
        QVERIFY(store.row(0, 0, dropped - 1) == nullptr);
        QVERIFY(store.row(1, 2, dropped - 1) == nullptr);
        QCOMPARE(store.row(0, 1, 63)->at(5), value(1, 63, 5));  // the newest rows are intact
        QCOMPARE(store.row(1, 0, dropped)->size(), size_t(dropped + 1));
        // A generated token's rows still fit: older ones make room.
        store.addEvents({wb_gui_test::attentionEvent(0, 3, 64, 1, value), wb_gui_test::attentionEvent(1, 3, 64, 1, value)});
        QVERIFY(store.bytesUsed() <= all / 2);
        QVERIFY(store.row(1, 1, 64) != nullptr);
        QVERIFY(store.droppedBelow() > dropped);
        panel.refreshNow();
        QVERIFY(panel.describeCell(1, 0).contains("dropped (capture memory budget)"));

        QSignalSpy budget(&panel, &AttentionPanel::captureBudgetChanged);
        QAction* smallest = panel.budgetGroup()->actions().first();
        QCOMPARE(smallest->data().toInt(), 64);
        smallest->trigger();
        QCOMPARE(budget.count(), 1);
        QCOMPARE(budget.at(0).at(0).toInt(), 64);
        QCOMPARE(store.budgetBytes(), qint64(64) << 20);
        QVERIFY(panel.memoryLabel()->text().contains("of 64 MiB"));
        store.clear();
        QCOMPARE(store.bytesUsed(), qint64(0));
        QCOMPARE(store.droppedBelow(), 0);
    }

    // A streamed reply changes the store once per token. Hidden, the panel rebuilds nothing until it
    // is shown; shown, tokens that come within the refresh interval are drawn by one refresh, and
    // that refresh shows the last of them.
    void streamedTokensRefreshTheMapOnceAnInterval() {
        AttentionStore store;
        AttentionPanel panel(&store);
        feedPrefill(store);
        panel.setLayer(2);
        const int atStart = panel.refreshCount();
        for (int t = 3; t < 23; ++t) {
            store.handleToken(t, QString("t%1").arg(t));
            store.addEvents({wb_gui_test::attentionEvent(2, 3, t, 1, value)});
            QCoreApplication::processEvents();
        }
        QCOMPARE(panel.refreshCount(), atStart);
        panel.show();
        QTRY_COMPARE(panel.refreshCount(), atStart + 1);
        QCOMPARE(panel.colorMap()->tokenCount(), 23);

        panel.setMinRefreshInterval(3600 * 1000);  // every token below falls inside the interval
        for (int t = 23; t < 43; ++t) {
            store.handleToken(t, QString("t%1").arg(t));
            store.addEvents({wb_gui_test::attentionEvent(2, 3, t, 1, value)});
            QCoreApplication::processEvents();
        }
        QCOMPARE(panel.refreshCount(), atStart + 1);
        QCOMPARE(panel.colorMap()->tokenCount(), 23);
        panel.setMinRefreshInterval(0);  // the waiting refresh comes now, with the last token's row
        QTRY_COMPARE(panel.refreshCount(), atStart + 2);
        AttentionMapImage* d = panel.colorMap();
        QCOMPARE(d->tokenCount(), 43);
        QCOMPARE(d->cell(40, 42), double(value(panel.head(), 42, 40)));
    }

    // While a reply streams, a refresh writes and colours the rows of the new tokens only: row q
    // has q + 1 keys (later keys stay the masked colour they were filled with), not n x n cells.
    void streamedRefreshColoursOnlyTheNewRows() {
        AttentionStore store;
        AttentionPanel panel(&store);
        store.setModelShape(4, 3);
        store.handlePrompt(prompt(pieces(40)));
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 0, 40, flat)});
        panel.setLayer(2);
        panel.refreshNow();
        AttentionMapImage* map = panel.colorMap();
        map->image();  // colours what the prefill wrote
        const int fullRebuilds = panel.fullRebuildCount();
        qint64 coloured = map->cellsColoured();
        store.handleToken(40, "t40");
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 40, 1, flat)});
        panel.refreshNow();
        panel.plot()->replot();  // drawing colours the pending rows
        QCOMPARE(map->cellsColoured() - coloured, qint64(41));
        coloured = map->cellsColoured();
        for (int t = 41; t < 44; ++t) {
            store.handleToken(t, QString("t%1").arg(t));
            store.addEvents({wb_gui_test::attentionEvent(2, 3, t, 1, flat)});
        }
        panel.refreshNow();
        map->image();
        QCOMPARE(map->cellsColoured() - coloured, qint64(42 + 43 + 44));
        QCOMPARE(panel.fullRebuildCount(), fullRebuilds);
        QCOMPARE(map->tokenCount(), 44);
        QCOMPARE(map->cell(43, 43), double(flat(0, 43, 43)));
        // A new top of the colour scale recolours every row (all colours move), still without a rebuild.
        store.handleToken(44, "t44");
        store.addEvents({wb_gui_test::attentionEvent(2, 3, 44, 1, [](int, int, int k) { return k == 3 ? 0.95f : 0.01f; })});
        coloured = map->cellsColoured();
        panel.refreshNow();
        map->image();
        QCOMPARE(map->cellsColoured() - coloured, qint64(45 * 46 / 2));
        QCOMPARE(panel.fullRebuildCount(), fullRebuilds);
        expectSameAsFullRebuild(panel, store);
    }

    // Row by row the panel must end where a full rebuild starts: in each view, through streamed
    // tokens (a sliding-window layer among them), a rising scale top, rows the budget drops, a layer
    // switch and back, a new prompt that reuses a prefix, and a new chat.
    void incrementalMapEqualsAFullRebuild() {
        for (AttentionPanel::Mode mode : {AttentionPanel::Mode::SingleHead, AttentionPanel::Mode::MeanOverHeads,
                                          AttentionPanel::Mode::AllHeads}) {
            AttentionStore store;
            AttentionPanel panel(&store);
            store.setModelShape(4, 3);
            panel.setMode(mode);
            panel.setHead(1);
            panel.setLayer(2);
            store.handlePrompt(prompt(pieces(24)));
            wb::AttentionEvent windowed = wb_gui_test::attentionEvent(1, 3, 0, 24, value);
            windowed.window = 4;
            store.addEvents({windowed, wb_gui_test::attentionEvent(2, 3, 0, 24, flat)});
            panel.refreshNow();
            const int fullRebuilds = panel.fullRebuildCount();
            for (int t = 24; t < 60; ++t) {
                // value() grows with the query: from token 40 on every row raises the scale's top.
                streamToken(store, t, t < 40 ? flat : value);
                if (t % 3 == 0) panel.refreshNow();
            }
            panel.refreshNow();
            QCOMPARE(panel.fullRebuildCount(), fullRebuilds);
            expectSameAsFullRebuild(panel, store);

            // A budget that holds about half the rows drops the oldest ones: they turn "dropped".
            store.setBudgetBytes(store.bytesUsed() / 2);
            QVERIFY(store.droppedBelow() > 0);
            for (int t = 60; t < 66; ++t) {
                streamToken(store, t, flat);
                if (t % 2 == 0) panel.refreshNow();
            }
            panel.refreshNow();
            QCOMPARE(panel.fullRebuildCount(), fullRebuilds);
            expectSameAsFullRebuild(panel, store);
            store.setBudgetBytes(AttentionStore::kDefaultBudget);

            panel.setLayer(1);  // the sliding-window layer: a user's switch redraws all
            for (int t = 66; t < 72; ++t) {
                streamToken(store, t, value);
                panel.refreshNow();
            }
            expectSameAsFullRebuild(panel, store);
            panel.setLayer(2);
            expectSameAsFullRebuild(panel, store);

            // The next message reuses the first 30 positions: the rows after them are recomputed.
            PromptInfo next = prompt(pieces(30) + pieces(12, 100));
            next.reused = 30;
            store.handlePrompt(next);
            panel.refreshNow();
            store.addEvents({wb_gui_test::attentionEvent(2, 3, 30, 12, flat)});
            for (int t = 42; t < 48; ++t) {
                streamToken(store, t, flat);
                if (t % 2 == 0) panel.refreshNow();
            }
            panel.refreshNow();
            expectSameAsFullRebuild(panel, store);

            // New chat: the store is cleared and a shorter conversation starts.
            store.clear();
            store.handlePrompt(prompt(pieces(5)));
            store.addEvents({wb_gui_test::attentionEvent(2, 3, 0, 5, value)});
            panel.refreshNow();
            for (int t = 5; t < 12; ++t) {
                streamToken(store, t, value);
                panel.refreshNow();
            }
            expectSameAsFullRebuild(panel, store);

            // Another new chat, longer than the last, whose first rows this layer did not capture:
            // none of the last chat's rows may stay where the new chat has none.
            store.clear();
            store.handlePrompt(prompt(pieces(20, 200)));
            store.addEvents({wb_gui_test::attentionEvent(2, 3, 10, 10, flat)});
            panel.refreshNow();
            for (int t = 20; t < 25; ++t) {
                streamToken(store, t, flat);
                panel.refreshNow();
            }
            QVERIFY(std::isnan(panel.colorMap(mode == AttentionPanel::Mode::AllHeads ? 0 : -1)->cell(0, 3)));
            expectSameAsFullRebuild(panel, store);
        }
    }

    // New chat after a long conversation: the maps' images and values shrink to the new chat's size
    // (they only grow while a reply streams; hundreds of MB stayed allocated after a long chat).
    void newChatGivesTheMapsMemoryBack() {
        for (AttentionPanel::Mode mode : {AttentionPanel::Mode::SingleHead, AttentionPanel::Mode::AllHeads}) {
            AttentionStore store;
            AttentionPanel panel(&store);
            store.setModelShape(4, 3);
            panel.setLayer(2);
            panel.setMode(mode);
            const int head = mode == AttentionPanel::Mode::AllHeads ? 1 : -1;
            store.handlePrompt(prompt(pieces(600)));
            store.addEvents({wb_gui_test::attentionEvent(2, 3, 0, 600, flat)});
            panel.refreshNow();
            QVERIFY(panel.colorMap(head)->capacity() >= 600);
            store.clear();
            store.handlePrompt(prompt(pieces(5)));
            store.addEvents({wb_gui_test::attentionEvent(2, 3, 0, 5, value)});
            panel.refreshNow();
            QCOMPARE(panel.colorMap(head)->tokenCount(), 5);
            QVERIFY2(panel.colorMap(head)->capacity() <= 128, qPrintable(QString::number(panel.colorMap(head)->capacity())));
            expectSameAsFullRebuild(panel, store);
        }
    }

    // A theme change recolours the kept rows (masked cells, the out-of-window keys and every value)
    // without reading the store again: the map then equals one built in the new theme, and a
    // streamed token after it is coloured in the new theme too.
    void themeChangeRecoloursTheKeptMap() {
        Theme::apply(ThemeMode::Light);
        AttentionStore store;
        AttentionPanel panel(&store);
        store.setModelShape(4, 3);
        store.handlePrompt(prompt(pieces(20)));
        wb::AttentionEvent windowed = wb_gui_test::attentionEvent(1, 3, 0, 20, value);
        windowed.window = 4;
        store.addEvents({windowed});
        panel.setLayer(1);
        panel.refreshNow();
        const QRgb lightMasked = panel.colorMap()->image().pixel(5, 2);
        QCOMPARE(lightMasked, Theme::color(Theme::Role::MaskedCell).rgba());
        const int fullRebuilds = panel.fullRebuildCount();
        Theme::apply(ThemeMode::Dark);
        QCOMPARE(panel.colorMap()->image().pixel(5, 2), Theme::color(Theme::Role::MaskedCell).rgba());
        QVERIFY(panel.colorMap()->image().pixel(5, 2) != lightMasked);
        expectSameAsFullRebuild(panel, store);
        streamToken(store, 20, value);
        panel.refreshNow();
        QCOMPARE(panel.fullRebuildCount(), fullRebuilds);
        expectSameAsFullRebuild(panel, store);
        Theme::apply(ThemeMode::System);
    }

    void exportsPngAndCsv() {
        AttentionStore store;
        AttentionPanel panel(&store);
        panel.resize(600, 500);
        feedPrefill(store);
        panel.setLayer(2);
        panel.refreshNow();
        QTemporaryDir dir;
        QVERIFY(panel.exportPng(dir.filePath("a.png")));
        QVERIFY(!QImage(dir.filePath("a.png")).isNull());
        QString error;
        QVERIFY2(panel.exportCsv(dir.filePath("a.csv"), &error), qPrintable(error));
        QFile f(dir.filePath("a.csv"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 5);  // comment, header, three query rows
        QVERIFY(lines[1].contains("\"1:Hello\""));
        const QStringList row2 = lines[4].split(',');
        QCOMPARE(row2.size(), 4);
        QCOMPARE(row2[2].toDouble(), double(QString::number(value(0, 2, 1), 'g', 6).toDouble()));
    }
};

QTEST_MAIN(TestAttentionPanel)
#include "test_attention_panel.moc"
