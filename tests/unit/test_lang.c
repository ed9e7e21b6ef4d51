/* Unit tests for language detection (lang_detect, lang_candidates). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "text/lang.h"

static const char *detect(const char *text)
{
    return lang_code(lang_detect(text, strlen(text)));
}

static lang_set cands(const char *text)
{
    return lang_candidates(text, strlen(text));
}

#define BIT(l) ((lang_set)1 << (l))

static void test_sentences(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"en", "Create an archive and write it to a file. The archive is compressed with gzip."},
        {"de", "Erstelle ein Archiv von Dateien und schreibe es in eine Datei, die mit gzip "
               "komprimiert wird."},
        {"fr", "Crée une archive à partir de fichiers et l'écrit dans un fichier qui est "
               "compressé avec gzip."},
        {"es", "Crea un archivo a partir de los ficheros y lo escribe en el disco con gzip."},
        {"it", "Crea un archivio dei file e lo scrive nella cartella con il nome indicato."},
        {"pt", "Cria um arquivo a partir dos ficheiros e o escreve em um disco com o gzip, não "
               "mais."},
        {"nl", "Maak een archief van bestanden en schrijf het naar een bestand dat met gzip is "
               "gecomprimeerd."},
        {"pl", "Utwórz archiwum z plików i zapisz je do pliku, który jest skompresowany."},
        {"ru", "Создать архив из файлов и записать его в файл, который сжат с помощью gzip."},
        {"uk", "Створити архів з файлів і записати його до файлу, що стиснутий за допомогою gzip."},
        {"zh", "从文件创建归档并写入文件，使用 gzip 压缩。"},
        {"ja", "ファイルからアーカイブを作成し、ファイルに書き込みます。"},
        {"ko", "파일에서 아카이브를 만들고 파일에 씁니다."},
        {"el", "Δημιουργία αρχείου από αρχεία."},
        /* few or no function words: letters few languages use decide */
        {"ru", "Сервис менеджер Android. Список всех запущенных сервисов."},
        {"da", "Opret et arkiv af filer og skriv det til en fil."},
        {"nb", "Denne kommandoen er et alias for det."},
        /* URL segments are no words ("c/en/us" is not Czech or Spanish) */
        {"en", "Show various system information. More information: "
               "<https://www.cisco.com/c/en/us/td/docs/s/v/k/z/a.html>. Show the switch."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = detect(cases[i][1]);
        if (strcmp(got, cases[i][0]) != 0)
            fail_msg("expected %s, got '%s' for: %s", cases[i][0], got, cases[i][1]);
    }
}

static void test_code_does_not_vote(void **state)
{
    (void)state;
    /* English words only inside code: the prose is German */
    const char *t = "Erstelle ein Archiv und entpacke es in das Verzeichnis:\n\n"
                    "`tar -x -f path/to/the/file.tar -C the/dir and is it`\n\n"
                    "```\nif the file is in the archive then it is to be read\n```\n";
    assert_string_equal(detect(t), "de");
    /* a stray backtick hides only the rest of its line */
    t = "a ` stray tick\nDas ist ein Text und der Text ist nicht kurz.";
    assert_string_equal(detect(t), "de");
}

static void test_too_little_evidence(void **state)
{
    (void)state;
    assert_string_equal(detect(""), "");
    assert_string_equal(detect("tar gzip 42 ---"), "");
    assert_string_equal(detect("a"), "");           /* one ambiguous word */
    assert_string_equal(detect("\xff\xfe\x80"), ""); /* invalid UTF-8 */
    assert_string_equal(lang_code(999), "");
    assert_int_equal(lang_from_code("de"), LANG_DE);
    assert_int_equal(lang_from_code("xx"), LANG_UND);
    assert_int_equal(lang_from_code(NULL), LANG_UND);
}

static void test_query_candidates(void **state)
{
    (void)state;
    assert_int_equal(cands("how to extract the archive"), BIT(LANG_EN));
    assert_int_equal(cands("wie entpacke ich das Archiv"), BIT(LANG_DE));
    /* "a" is English, French, Spanish, Italian, Portuguese and Czech */
    lang_set s = cands("extract a tar archive");
    assert_true(s & BIT(LANG_EN));
    assert_true(s & BIT(LANG_FR));
    assert_false(s & BIT(LANG_DE));
    /* no function word: any Latin-script language */
    s = cands("tar");
    assert_true((s & BIT(LANG_EN)) && (s & BIT(LANG_DE)) && (s & BIT(LANG_SV)));
    assert_false(s & BIT(LANG_RU));
    assert_int_equal(cands("архив"), BIT(LANG_RU) | BIT(LANG_UK));
    assert_int_equal(cands("链接"), BIT(LANG_ZH));
    assert_int_equal(cands("リンク"), BIT(LANG_JA));
    assert_int_equal(cands("링크"), BIT(LANG_KO));
    assert_int_equal(cands("42 !!"), 0);
}

/* Each language folder of the Obsidian help vault (the shared corpus, else
 * its excerpt in fixtures/shared-mini) is detected as that language, nearly
 * always. */
static void test_obsidian_help(void **state)
{
    (void)state;
    char root[512];
    int kind = tu_corpus_dir("obsidian-help", root, sizeof root);
    if (!kind)
        tu_skip("no obsidian-help corpus (shared corpora or fixtures/shared-mini)");
    static const char *const langs[] = {"en", "de", "fr", "ja", "ko", "zh"};
    for (size_t l = 0; l < sizeof langs / sizeof *langs; l++) {
        char dir[600], cmd[700];
        snprintf(dir, sizeof dir, "%s/%s", root, langs[l]);
        snprintf(cmd, sizeof cmd, "find '%s' -name '*.md' -size +1k", dir);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        char line[1024];
        int n = 0, right = 0;
        while (fgets(line, sizeof line, p)) {
            line[strcspn(line, "\n")] = '\0';
            size_t len;
            char *text = tu_slurp(line, &len);
            if (!text)
                continue;
            n++;
            const char *got = lang_code(lang_detect(text, len));
            if (strcmp(got, langs[l]) == 0)
                right++;
            else
                print_message("%s: detected '%s'\n", line, got);
            free(text);
        }
        pclose(p);
        print_message("obsidian-help/%s: %d of %d\n", langs[l], right, n);
        assert_true(n >= (kind == TU_CORPUS_FULL ? 50 : 5));
        assert_true(right * 100 >= n * 95);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sentences),
        cmocka_unit_test(test_code_does_not_vote),
        cmocka_unit_test(test_too_little_evidence),
        cmocka_unit_test(test_query_candidates),
        cmocka_unit_test(test_obsidian_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
