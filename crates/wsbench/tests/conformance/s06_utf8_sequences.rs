//! Autobahn cases 6.5.x–6.23.x: one text message per UTF-8 test sequence (after Markus
//! Kuhn's UTF-8-test.txt, as Autobahn's `case6_x_x.py` builds them). A valid sequence must be
//! echoed unchanged; an invalid one (overlong forms, surrogates, code points past U+10FFFF,
//! stray or missing continuation bytes, impossible bytes) must fail the connection with 1007.
//!
//! The table below is generated (one named `#[test]` per entry); each name carries the
//! Autobahn case number, the sequence category, the payload in hex and the verdict.

use crate::connect;

/// Sends `payload` as one text frame; valid UTF-8 must echo, anything else must fail 1007.
fn run(valid: bool, payload: &[u8]) {
    let mut c = connect();
    c.send_text(payload);
    if valid {
        c.expect_text(payload);
        c.close_normally();
    } else {
        c.expect_fail(1007);
    }
}

macro_rules! utf8_cases {
    ($($name:ident: $valid:expr, $payload:expr;)*) => {
        $(
            #[test]
            fn $name() {
                run($valid, $payload);
            }
        )*
    };
}

utf8_cases! {
    case_6_5_1_valid_sample_hello_dollar_world_is_echoed: true, b"\x68\x65\x6c\x6c\x6f\x24\x77\x6f\x72\x6c\x64";
    case_6_5_2_valid_sample_hello_cent_world_is_echoed: true, b"\x68\x65\x6c\x6c\x6f\xc2\xa2\x77\x6f\x72\x6c\x64";
    case_6_5_3_valid_sample_hello_euro_world_is_echoed: true, b"\x68\x65\x6c\x6c\x6f\xe2\x82\xac\x77\x6f\x72\x6c\x64";
    case_6_5_4_valid_sample_hello_u24b62_world_is_echoed: true, b"\x68\x65\x6c\x6c\x6f\xf0\xa4\xad\xa2\x77\x6f\x72\x6c\x64";
    case_6_5_5_valid_sample_kosme_is_echoed: true, b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5";
    case_6_6_1_kosme_prefix_len_1_fails_1007: false, b"\xce";
    case_6_6_2_kosme_prefix_len_2_is_echoed: true, b"\xce\xba";
    case_6_6_3_kosme_prefix_len_3_fails_1007: false, b"\xce\xba\xe1";
    case_6_6_4_kosme_prefix_len_4_fails_1007: false, b"\xce\xba\xe1\xbd";
    case_6_6_5_kosme_prefix_len_5_is_echoed: true, b"\xce\xba\xe1\xbd\xb9";
    case_6_6_6_kosme_prefix_len_6_fails_1007: false, b"\xce\xba\xe1\xbd\xb9\xcf";
    case_6_6_7_kosme_prefix_len_7_is_echoed: true, b"\xce\xba\xe1\xbd\xb9\xcf\x83";
    case_6_6_8_kosme_prefix_len_8_fails_1007: false, b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce";
    case_6_6_9_kosme_prefix_len_9_is_echoed: true, b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc";
    case_6_6_10_kosme_prefix_len_10_fails_1007: false, b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce";
    case_6_6_11_kosme_prefix_len_11_is_echoed: true, b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5";
    case_6_7_1_first_possible_sequence_00_is_echoed: true, b"\x00";
    case_6_7_2_first_possible_sequence_c280_is_echoed: true, b"\xc2\x80";
    case_6_7_3_first_possible_sequence_e0a080_is_echoed: true, b"\xe0\xa0\x80";
    case_6_7_4_first_possible_sequence_f0908080_is_echoed: true, b"\xf0\x90\x80\x80";
    case_6_8_1_first_possible_5_or_6_byte_sequence_f888808080_fails_1007: false, b"\xf8\x88\x80\x80\x80";
    case_6_8_2_first_possible_5_or_6_byte_sequence_fc8480808080_fails_1007: false, b"\xfc\x84\x80\x80\x80\x80";
    case_6_9_1_last_possible_sequence_7f_is_echoed: true, b"\x7f";
    case_6_9_2_last_possible_sequence_dfbf_is_echoed: true, b"\xdf\xbf";
    case_6_9_3_last_possible_sequence_efbfbf_is_echoed: true, b"\xef\xbf\xbf";
    case_6_9_4_last_possible_sequence_f48fbfbf_is_echoed: true, b"\xf4\x8f\xbf\xbf";
    case_6_10_1_last_possible_4_5_6_byte_sequence_f7bfbfbf_fails_1007: false, b"\xf7\xbf\xbf\xbf";
    case_6_10_2_last_possible_4_5_6_byte_sequence_fbbfbfbfbf_fails_1007: false, b"\xfb\xbf\xbf\xbf\xbf";
    case_6_10_3_last_possible_4_5_6_byte_sequence_fdbfbfbfbfbf_fails_1007: false, b"\xfd\xbf\xbf\xbf\xbf\xbf";
    case_6_11_1_boundary_condition_ed9fbf_is_echoed: true, b"\xed\x9f\xbf";
    case_6_11_2_boundary_condition_ee8080_is_echoed: true, b"\xee\x80\x80";
    case_6_11_3_boundary_condition_efbfbd_is_echoed: true, b"\xef\xbf\xbd";
    case_6_11_4_boundary_condition_f48fbfbf_is_echoed: true, b"\xf4\x8f\xbf\xbf";
    case_6_11_5_boundary_condition_f4908080_fails_1007: false, b"\xf4\x90\x80\x80";
    case_6_12_1_unexpected_continuation_80_fails_1007: false, b"\x80";
    case_6_12_2_unexpected_continuation_bf_fails_1007: false, b"\xbf";
    case_6_12_3_unexpected_continuation_80bf_fails_1007: false, b"\x80\xbf";
    case_6_12_4_unexpected_continuation_80bf80_fails_1007: false, b"\x80\xbf\x80";
    case_6_12_5_unexpected_continuation_80bf80bf_fails_1007: false, b"\x80\xbf\x80\xbf";
    case_6_12_6_unexpected_continuation_80bf80bf80_fails_1007: false, b"\x80\xbf\x80\xbf\x80";
    case_6_12_7_unexpected_continuation_80bf80bf80bf_fails_1007: false, b"\x80\xbf\x80\xbf\x80\xbf";
    case_6_12_8_unexpected_continuation_all_80_to_be_fails_1007: false, b"\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xbb\xbc\xbd\xbe";
    case_6_13_1_lonely_start_bytes_c0_to_de_each_followed_by_space_fails_1007: false, b"\xc0\x20\xc1\x20\xc2\x20\xc3\x20\xc4\x20\xc5\x20\xc6\x20\xc7\x20\xc8\x20\xc9\x20\xca\x20\xcb\x20\xcc\x20\xcd\x20\xce\x20\xcf\x20\xd0\x20\xd1\x20\xd2\x20\xd3\x20\xd4\x20\xd5\x20\xd6\x20\xd7\x20\xd8\x20\xd9\x20\xda\x20\xdb\x20\xdc\x20\xdd\x20\xde\x20";
    case_6_13_2_lonely_start_bytes_e0_to_ee_each_followed_by_space_fails_1007: false, b"\xe0\x20\xe1\x20\xe2\x20\xe3\x20\xe4\x20\xe5\x20\xe6\x20\xe7\x20\xe8\x20\xe9\x20\xea\x20\xeb\x20\xec\x20\xed\x20\xee\x20";
    case_6_13_3_lonely_start_bytes_f0_to_f6_each_followed_by_space_fails_1007: false, b"\xf0\x20\xf1\x20\xf2\x20\xf3\x20\xf4\x20\xf5\x20\xf6\x20";
    case_6_13_4_lonely_start_bytes_f8_to_fa_each_followed_by_space_fails_1007: false, b"\xf8\x20\xf9\x20\xfa\x20";
    case_6_13_5_lonely_start_bytes_fc_to_fc_each_followed_by_space_fails_1007: false, b"\xfc\x20";
    case_6_14_1_missing_last_continuation_c0_fails_1007: false, b"\xc0";
    case_6_14_2_missing_last_continuation_e080_fails_1007: false, b"\xe0\x80";
    case_6_14_3_missing_last_continuation_f08080_fails_1007: false, b"\xf0\x80\x80";
    case_6_14_4_missing_last_continuation_f8808080_fails_1007: false, b"\xf8\x80\x80\x80";
    case_6_14_5_missing_last_continuation_fc80808080_fails_1007: false, b"\xfc\x80\x80\x80\x80";
    case_6_14_6_missing_last_continuation_df_fails_1007: false, b"\xdf";
    case_6_14_7_missing_last_continuation_efbf_fails_1007: false, b"\xef\xbf";
    case_6_14_8_missing_last_continuation_f7bfbf_fails_1007: false, b"\xf7\xbf\xbf";
    case_6_14_9_missing_last_continuation_fbbfbfbf_fails_1007: false, b"\xfb\xbf\xbf\xbf";
    case_6_14_10_missing_last_continuation_fdbfbfbfbf_fails_1007: false, b"\xfd\xbf\xbf\xbf\xbf";
    case_6_15_1_concatenated_incomplete_sequences_all_ten_fails_1007: false, b"\xc0\xe0\x80\xf0\x80\x80\xf8\x80\x80\x80\xfc\x80\x80\x80\x80\xdf\xef\xbf\xf7\xbf\xbf\xfb\xbf\xbf\xbf\xfd\xbf\xbf\xbf\xbf";
    case_6_16_1_impossible_bytes_fe_fails_1007: false, b"\xfe";
    case_6_16_2_impossible_bytes_ff_fails_1007: false, b"\xff";
    case_6_16_3_impossible_bytes_fefeffff_fails_1007: false, b"\xfe\xfe\xff\xff";
    case_6_17_1_overlong_slash_c0af_fails_1007: false, b"\xc0\xaf";
    case_6_17_2_overlong_slash_e080af_fails_1007: false, b"\xe0\x80\xaf";
    case_6_17_3_overlong_slash_f08080af_fails_1007: false, b"\xf0\x80\x80\xaf";
    case_6_17_4_overlong_slash_f8808080af_fails_1007: false, b"\xf8\x80\x80\x80\xaf";
    case_6_17_5_overlong_slash_fc80808080af_fails_1007: false, b"\xfc\x80\x80\x80\x80\xaf";
    case_6_18_1_maximum_overlong_c1bf_fails_1007: false, b"\xc1\xbf";
    case_6_18_2_maximum_overlong_e09fbf_fails_1007: false, b"\xe0\x9f\xbf";
    case_6_18_3_maximum_overlong_f08fbfbf_fails_1007: false, b"\xf0\x8f\xbf\xbf";
    case_6_18_4_maximum_overlong_f887bfbfbf_fails_1007: false, b"\xf8\x87\xbf\xbf\xbf";
    case_6_18_5_maximum_overlong_fc83bfbfbfbf_fails_1007: false, b"\xfc\x83\xbf\xbf\xbf\xbf";
    case_6_19_1_overlong_nul_c080_fails_1007: false, b"\xc0\x80";
    case_6_19_2_overlong_nul_e08080_fails_1007: false, b"\xe0\x80\x80";
    case_6_19_3_overlong_nul_f0808080_fails_1007: false, b"\xf0\x80\x80\x80";
    case_6_19_4_overlong_nul_f880808080_fails_1007: false, b"\xf8\x80\x80\x80\x80";
    case_6_19_5_overlong_nul_fc8080808080_fails_1007: false, b"\xfc\x80\x80\x80\x80\x80";
    case_6_20_1_single_surrogate_eda080_fails_1007: false, b"\xed\xa0\x80";
    case_6_20_2_single_surrogate_edadbf_fails_1007: false, b"\xed\xad\xbf";
    case_6_20_3_single_surrogate_edae80_fails_1007: false, b"\xed\xae\x80";
    case_6_20_4_single_surrogate_edafbf_fails_1007: false, b"\xed\xaf\xbf";
    case_6_20_5_single_surrogate_edb080_fails_1007: false, b"\xed\xb0\x80";
    case_6_20_6_single_surrogate_edbe80_fails_1007: false, b"\xed\xbe\x80";
    case_6_20_7_single_surrogate_edbfbf_fails_1007: false, b"\xed\xbf\xbf";
    case_6_21_1_paired_surrogates_eda080edb080_fails_1007: false, b"\xed\xa0\x80\xed\xb0\x80";
    case_6_21_2_paired_surrogates_eda080edbfbf_fails_1007: false, b"\xed\xa0\x80\xed\xbf\xbf";
    case_6_21_3_paired_surrogates_edadbfedb080_fails_1007: false, b"\xed\xad\xbf\xed\xb0\x80";
    case_6_21_4_paired_surrogates_edadbfedbfbf_fails_1007: false, b"\xed\xad\xbf\xed\xbf\xbf";
    case_6_21_5_paired_surrogates_edae80edb080_fails_1007: false, b"\xed\xae\x80\xed\xb0\x80";
    case_6_21_6_paired_surrogates_edae80edbfbf_fails_1007: false, b"\xed\xae\x80\xed\xbf\xbf";
    case_6_21_7_paired_surrogates_edafbfedb080_fails_1007: false, b"\xed\xaf\xbf\xed\xb0\x80";
    case_6_21_8_paired_surrogates_edafbfedbfbf_fails_1007: false, b"\xed\xaf\xbf\xed\xbf\xbf";
    case_6_22_1_noncharacter_efbfbe_is_echoed: true, b"\xef\xbf\xbe";
    case_6_22_2_noncharacter_efbfbf_is_echoed: true, b"\xef\xbf\xbf";
    case_6_22_3_noncharacter_f09fbfbe_is_echoed: true, b"\xf0\x9f\xbf\xbe";
    case_6_22_4_noncharacter_f09fbfbf_is_echoed: true, b"\xf0\x9f\xbf\xbf";
    case_6_22_5_noncharacter_f0afbfbe_is_echoed: true, b"\xf0\xaf\xbf\xbe";
    case_6_22_6_noncharacter_f0afbfbf_is_echoed: true, b"\xf0\xaf\xbf\xbf";
    case_6_22_7_noncharacter_f0bfbfbe_is_echoed: true, b"\xf0\xbf\xbf\xbe";
    case_6_22_8_noncharacter_f0bfbfbf_is_echoed: true, b"\xf0\xbf\xbf\xbf";
    case_6_22_9_noncharacter_f18fbfbe_is_echoed: true, b"\xf1\x8f\xbf\xbe";
    case_6_22_10_noncharacter_f18fbfbf_is_echoed: true, b"\xf1\x8f\xbf\xbf";
    case_6_22_11_noncharacter_f19fbfbe_is_echoed: true, b"\xf1\x9f\xbf\xbe";
    case_6_22_12_noncharacter_f19fbfbf_is_echoed: true, b"\xf1\x9f\xbf\xbf";
    case_6_22_13_noncharacter_f1afbfbe_is_echoed: true, b"\xf1\xaf\xbf\xbe";
    case_6_22_14_noncharacter_f1afbfbf_is_echoed: true, b"\xf1\xaf\xbf\xbf";
    case_6_22_15_noncharacter_f1bfbfbe_is_echoed: true, b"\xf1\xbf\xbf\xbe";
    case_6_22_16_noncharacter_f1bfbfbf_is_echoed: true, b"\xf1\xbf\xbf\xbf";
    case_6_22_17_noncharacter_f28fbfbe_is_echoed: true, b"\xf2\x8f\xbf\xbe";
    case_6_22_18_noncharacter_f28fbfbf_is_echoed: true, b"\xf2\x8f\xbf\xbf";
    case_6_22_19_noncharacter_f29fbfbe_is_echoed: true, b"\xf2\x9f\xbf\xbe";
    case_6_22_20_noncharacter_f29fbfbf_is_echoed: true, b"\xf2\x9f\xbf\xbf";
    case_6_22_21_noncharacter_f2afbfbe_is_echoed: true, b"\xf2\xaf\xbf\xbe";
    case_6_22_22_noncharacter_f2afbfbf_is_echoed: true, b"\xf2\xaf\xbf\xbf";
    case_6_22_23_noncharacter_f2bfbfbe_is_echoed: true, b"\xf2\xbf\xbf\xbe";
    case_6_22_24_noncharacter_f2bfbfbf_is_echoed: true, b"\xf2\xbf\xbf\xbf";
    case_6_22_25_noncharacter_f38fbfbe_is_echoed: true, b"\xf3\x8f\xbf\xbe";
    case_6_22_26_noncharacter_f38fbfbf_is_echoed: true, b"\xf3\x8f\xbf\xbf";
    case_6_22_27_noncharacter_f39fbfbe_is_echoed: true, b"\xf3\x9f\xbf\xbe";
    case_6_22_28_noncharacter_f39fbfbf_is_echoed: true, b"\xf3\x9f\xbf\xbf";
    case_6_22_29_noncharacter_f3afbfbe_is_echoed: true, b"\xf3\xaf\xbf\xbe";
    case_6_22_30_noncharacter_f3afbfbf_is_echoed: true, b"\xf3\xaf\xbf\xbf";
    case_6_22_31_noncharacter_f3bfbfbe_is_echoed: true, b"\xf3\xbf\xbf\xbe";
    case_6_22_32_noncharacter_f3bfbfbf_is_echoed: true, b"\xf3\xbf\xbf\xbf";
    case_6_22_33_noncharacter_f48fbfbe_is_echoed: true, b"\xf4\x8f\xbf\xbe";
    case_6_22_34_noncharacter_f48fbfbf_is_echoed: true, b"\xf4\x8f\xbf\xbf";
    case_6_23_1_unicode_special_efbfb9_is_echoed: true, b"\xef\xbf\xb9";
    case_6_23_2_unicode_special_efbfba_is_echoed: true, b"\xef\xbf\xba";
    case_6_23_3_unicode_special_efbfbb_is_echoed: true, b"\xef\xbf\xbb";
    case_6_23_4_unicode_special_efbfbc_is_echoed: true, b"\xef\xbf\xbc";
    case_6_23_5_unicode_special_efbfbd_is_echoed: true, b"\xef\xbf\xbd";
    case_6_23_6_unicode_special_efbfbe_is_echoed: true, b"\xef\xbf\xbe";
    case_6_23_7_unicode_special_efbfbf_is_echoed: true, b"\xef\xbf\xbf";
}
